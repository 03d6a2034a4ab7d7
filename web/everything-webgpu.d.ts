// Declarations of everything-webgpu.js (the page module of the browser build; docs/web.md).

/** The native engine's error codes: NO_WEBGPU, INVALID_MODEL_FOLDER, BAD_REQUEST, UNKNOWN_MODEL, NO_MODEL, ... */
export type ErrorCode = string;

export declare class EngineError extends Error {
  readonly name: 'EngineError';
  readonly code: ErrorCode;
  readonly detail: Record<string, unknown>;
  constructor(code: ErrorCode, message?: string, detail?: Record<string, unknown>);
}

export interface InitProgressReport {
  progress: number;
  timeElapsed: number;
  text: string;
  stage: 'parse' | 'upload' | 'pipelines' | 'ready' | string;
  model: string;
}

export interface ModelFile {
  name: string;
  data: ArrayBuffer | Uint8Array;
}

export interface ModelRegistration {
  modelId: string;
  /** Base URL; local folders get https://local-model.invalid/<modelId>/ (never fetched). */
  model?: string;
  files: ReadonlyArray<File | ModelFile>;
  /** Keep the folder in Cache Storage (WebLLM's scopes and keys) for the next page load (default true). */
  persist?: boolean;
}

export interface RegisteredModel {
  modelId: string;
  model: string;
  files: string[];
  weight_bytes: number;
  /** Whether its files are in Cache Storage. */
  cache: 'cached' | 'partial' | 'absent';
  inMemory?: boolean;
}

export interface LoadOptions {
  rows?: number;
  context?: number;
  decode_steps?: number;
  max_steps?: number;
  submission_ms?: number;
}

export interface EngineOptions {
  initProgressCallback?: (report: InitProgressReport) => void;
  /** Folders to register before loading modelId. */
  models?: ModelRegistration[];
  loadOptions?: LoadOptions;
  /** Device features to request when the adapter has them (default ['subgroups', 'shader-f16']). */
  features?: string[];
  workerUrl?: string | URL;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export interface CompletionFields {
  model?: string;
  stream?: boolean;
  stream_options?: {include_usage?: boolean};
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  seed?: number;
  stop?: string | string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  repetition_penalty?: number;
  logprobs?: boolean;
  top_logprobs?: number;
  logit_bias?: Record<string, number>;
  /** Scheduling fields (docs/engine.md). */
  session?: string;
  priority?: 'interactive' | 'normal' | 'background';
  preemptible?: boolean;
  task?: string;
}

export interface ChatCompletionRequest extends CompletionFields {
  messages: ChatMessage[];
}

export interface CompletionRequest extends CompletionFields {
  prompt: string;
}

/** OpenAI's chat.completion.chunk / text_completion chunk, with the engine's "ewgpu" extension on the last ones. */
export interface ChatCompletionChunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{index: number; delta?: {role?: string; content?: string}; text?: string;
    finish_reason: string | null; logprobs?: unknown}>;
  usage?: {prompt_tokens: number; completion_tokens: number; total_tokens: number};
  [key: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{index: number; message?: {role: string; content: string}; text?: string; finish_reason: string;
    logprobs?: unknown}>;
  usage: {prompt_tokens: number; completion_tokens: number; total_tokens: number};
  ewgpu?: {outcome: string; job: number; timings: Record<string, number>};
  [key: string]: unknown;
}

export interface ChunkStream extends AsyncIterableIterator<ChatCompletionChunk> {
  /** The scheduler's job number (for cancel). */
  readonly job: number;
  /** The completion id (chatcmpl-…). */
  readonly id: string;
  /** The whole response once the stream ended. */
  readonly response: ChatCompletion | null;
  /** Ends the job now: the stream ends after its last chunk, finish_reason "abort". */
  cancel(): Promise<{cancelled: number}>;
}

export interface DeviceSummary {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  features: string[];
  limits: Record<string, number>;
}

export declare class ScheduledEngine {
  constructor(options?: EngineOptions);
  readonly device: {adapter: DeviceSummary; engine: Record<string, unknown>} | undefined;
  readonly chat: {
    completions: {
      create(req: ChatCompletionRequest & {stream: true}): Promise<ChunkStream>;
      create(req: ChatCompletionRequest & {stream?: false}): Promise<ChatCompletion>;
      create(req: ChatCompletionRequest): Promise<ChatCompletion | ChunkStream>;
    };
  };
  readonly completions: {
    create(req: CompletionRequest & {stream: true}): Promise<ChunkStream>;
    create(req: CompletionRequest & {stream?: false}): Promise<ChatCompletion>;
    create(req: CompletionRequest): Promise<ChatCompletion | ChunkStream>;
  };
  init(): Promise<{adapter: DeviceSummary; engine: Record<string, unknown>}>;
  registerModel(reg: ModelRegistration): Promise<RegisteredModel>;
  load(modelId: string, options?: LoadOptions): Promise<Record<string, unknown>>;
  reload(modelId: string, options?: LoadOptions): Promise<Record<string, unknown>>;
  unload(modelId?: string): Promise<{unloaded: boolean}>;
  use(modelId: string): void;
  cancel(job: number | ChunkStream): Promise<{cancelled: number}>;
  interruptGenerate(): Promise<void>;
  listModels(): Promise<RegisteredModel[]>;
  deleteModel(modelId: string): Promise<{deleted: boolean}>;
  state(): Promise<Record<string, unknown>>;
  probe(): Promise<{webgpu: boolean} & Partial<DeviceSummary>>;
  memory(): Promise<{wasm_heap_bytes: number}>;
  subscribe(fn: (message: Record<string, unknown>) => void): () => void;
  ensurePersistent(): Promise<boolean>;
  terminate(): void;
}

export declare function CreateScheduledEngine(modelId: string | null, options?: EngineOptions): Promise<ScheduledEngine>;
