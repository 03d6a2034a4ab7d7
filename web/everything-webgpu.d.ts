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
  stage: 'fetch' | 'cache' | 'parse' | 'upload' | 'pipelines' | 'ready' | string;
  model: string;
  /** Bytes fetched (or found cached) so far and in all, during 'fetch'. */
  loaded?: number;
  total?: number;
}

export interface ModelFile {
  name: string;
  /** A Blob is passed by reference (read in slices while the weights upload); bytes are moved to the worker. */
  data: Blob | ArrayBuffer | Uint8Array;
}

/** WebLLM's AppConfig; of each model_list entry only model (a base URL) and model_id are read. */
export interface AppConfig {
  model_list: Array<{model: string; model_id: string; model_lib?: string; [key: string]: unknown}>;
  [key: string]: unknown;
}

export interface AvailableModel {
  modelId: string;
  model: string;
  source: 'local' | 'remote' | 'prebuilt';
  cache: 'cached' | 'partial' | 'absent';
}

export interface FitReport {
  ok: boolean;
  blockers: Array<{code: string; message: string}>;
  warnings: Array<{code: string; message: string}>;
}

export interface Recommendation {
  model_id: string;
  arch: string;
  quantization: string;
  params_b: number;
  weight_mb: number;
  vram_required_MB: number;
  fit: FitReport;
  [key: string]: unknown;
}

export interface EngineConfig {
  decodeSteps?: number;
  rows?: number;
  taskShare?: number;
}

export type BatchItem = (ChatCompletionRequest | CompletionRequest) & {stream?: never};

export interface BatchResult {
  task: string;
  /** In the items' order; a failed item is {index, error}. */
  results: Array<(ChatCompletion & {index: number}) | {index: number; error: {code: string; message: string; detail: unknown}}>;
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
  /** For a model fetched first (an appConfig or prebuilt id, a base URL); see fetchModel. */
  stall_timeout_s?: number;
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
  /** WebLLM's appConfig: its model_list ids become loadable (fetched into Cache Storage). */
  appConfig?: AppConfig;
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
  /** Structured output (docs/structured-output.md): OpenAI's shapes and WebLLM's {type: 'json_object', schema}. */
  response_format?: {type: 'text' | 'json_object'; schema?: string | object} |
    {type: 'json_schema'; json_schema: {name: string; schema?: object; strict?: boolean; description?: string}};
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
  /** Resolves to the whole response when the job ends (whether or not anyone iterates); rejects with an EngineError. */
  readonly finished: Promise<ChatCompletion>;
  /** Ends the job now: the stream ends after its last chunk, finish_reason "abort". */
  cancel(): Promise<{cancelled: number}>;
}

/** OpenAI's embeddings request (an embedding model: bert, e.g. snowflake-arctic-embed). */
export interface EmbeddingCreateParams {
  /** A string, strings (at most 2048), token ids, or lists of token ids; each at most the model's positions. */
  input: string | string[] | number[] | number[][];
  /** Default: the current model. */
  model?: string;
  /** "float" (default): arrays of numbers; "base64": each vector's little-endian float32 bytes in base64. */
  encoding_format?: 'float' | 'base64';
  /** Must equal the model's width (no truncation). */
  dimensions?: number;
  user?: string;
}

export interface Embedding {
  object: 'embedding';
  index: number;
  /** L2-normalised [CLS] vector (when the model's config says so, as MLC does); base64 with encoding_format. */
  embedding: number[] | string;
}

export interface CreateEmbeddingResponse {
  object: 'list';
  data: Embedding[];
  model: string;
  usage: {prompt_tokens: number; total_tokens: number};
}

/** A recipe's input: a string (one user message), a list of messages, or a request ({messages} or {prompt}) whose
 * own fields win over the options. */
export type RecipeInput = string | ChatMessage[] | ChatCompletionRequest | CompletionRequest;

/** Request fields a recipe passes on (its defaults, then these, then a request input's own fields). */
export type RecipeFields = Partial<CompletionFields>;

/** What a recipe resolves to. */
export interface RecipeResult {
  text: string;
  /** stop | length | abort (a superseded, cancelled or preempted job) */
  finish_reason: string | null;
  /** completed | superseded | cancelled | preempted | failed: why the job ended */
  outcome: string | null;
  /** The job was preempted by an interactive request (only one that opted in); text is what it had. Never requeued. */
  preempted: boolean;
  usage?: {prompt_tokens: number; completion_tokens: number; total_tokens: number;
    prompt_tokens_details?: {cached_tokens: number}};
  /** The input's position (0 for a single input). */
  index: number;
  /** Unix milliseconds when the job got its decode row and when it ended. */
  startedAt?: number;
  finishedAt?: number;
  job?: number;
  /** A batch's task (ask on an array). */
  task?: string;
  /** A failed batch item. */
  error?: EngineError;
  /** The OpenAI response as it came. */
  response?: ChatCompletion;
}

/** A streamed reply: iterate for the text deltas (leaving the loop early cancels), await result for the end. */
export declare class TextStream implements AsyncIterable<string> {
  /** The job number once the worker has taken the request (0 before). */
  readonly job: number;
  /** Resolves when the job ends, whether or not anyone iterates; rejects with an EngineError. */
  readonly result: Promise<RecipeResult>;
  [Symbol.asyncIterator](): AsyncIterator<string>;
  cancel(): Promise<{cancelled: number}>;
}

export interface AskOptions extends RecipeFields {
  /** Background priority and preemptible (the reformat shape). */
  background?: boolean;
  /** Each piece of text as it is generated (a single input only). */
  onDelta?: (text: string) => void;
  /** Each item's result as it lands (an array input). */
  onItem?: (result: RecipeResult) => void;
}

export interface ConversationOptions extends RecipeFields {
  /** The system message: the conversation's shared prefix (kept by the engine's prefix reuse). */
  system?: string;
  /** A history to start from. */
  messages?: ChatMessage[];
  /** The session key of every turn (default "conversation-<n>", unique in the page). */
  session?: string;
}

export declare class Conversation {
  readonly session: string;
  /** The system message and the completed turns (a copy). */
  readonly messages: ChatMessage[];
  /** Streams the reply to a user message; a completed turn (stop or length) is appended to the history. A send
   * while a reply is in flight supersedes it; a superseded, cancelled or preempted turn leaves no trace. */
  send(input: string | ChatMessage, opts?: RecipeFields): TextStream;
  /** Ends a reply in flight and clears the history (the system message stays). */
  reset(): Promise<{cancelled: number}>;
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
  /** On a loaded embedding model; rejects with EngineError (BAD_REQUEST naming detail.field, CONTEXT_TOO_LONG,
   * NO_MODEL, UNKNOWN_MODEL; BAD_REQUEST with field "model" for a chat model). */
  readonly embeddings: {
    create(req: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
  };
  init(): Promise<{adapter: DeviceSummary; engine: Record<string, unknown>}>;
  registerModel(reg: ModelRegistration): Promise<RegisteredModel>;
  setAppConfig(appConfig: AppConfig): Promise<{models: number}>;
  /** Fetches an appConfig / prebuilt id (or a base URL given as model) into Cache Storage without loading it.
   * stall_timeout_s (default 30): a transfer that brings no byte for this long is aborted and resumed. */
  fetchModel(modelId: string, model?: string, options?: {stall_timeout_s?: number}): Promise<RegisteredModel>;
  /** A registered id, an appConfig or prebuilt id, or a base URL (http(s)://…/). */
  load(modelId: string, options?: LoadOptions): Promise<Record<string, unknown>>;
  reload(modelId: string, options?: LoadOptions): Promise<Record<string, unknown>>;
  unload(modelId?: string): Promise<{unloaded: boolean}>;
  use(modelId: string): void;
  cancel(job: number | ChunkStream): Promise<{cancelled: number}>;
  interruptGenerate(): Promise<void>;
  batch(requests: BatchItem[] | {requests: BatchItem[]; task?: string; model?: string},
    onItem?: (result: ChatCompletion & {index: number}) => void): Promise<BatchResult>;
  /** Ghost text: interactive priority, session "ghost-text" (each call supersedes the previous one in flight),
   * max_tokens 24, streamed. The superseded call's result has finish_reason "abort", outcome "superseded". */
  ghostText(input: RecipeInput, opts?: RecipeFields): TextStream;
  /** One request at normal priority (opts.background: background + preemptible). */
  ask(input: RecipeInput, opts?: AskOptions): Promise<RecipeResult>;
  /** An array of inputs: one batch, one task (opts.task names it); results in the inputs' order. */
  ask(inputs: RecipeInput[], opts?: AskOptions): Promise<RecipeResult[]>;
  /** A chat whose history is kept under one session key. */
  conversation(opts?: ConversationOptions): Conversation;
  configure(config: EngineConfig): Promise<{decode_steps: number; rows: number; task_share: number}>;
  listModels(): Promise<RegisteredModel[]>;
  listAvailableModels(): Promise<AvailableModel[]>;
  canRun(modelId: string): Promise<FitReport>;
  recommendModels(options?: {maxVramMB?: number; prefer?: 'quality' | 'speed'; limit?: number}): Promise<Recommendation[]>;
  deleteModel(modelId: string): Promise<{deleted: boolean}>;
  state(): Promise<Record<string, unknown>>;
  probe(): Promise<{webgpu: boolean} & Partial<DeviceSummary>>;
  memory(): Promise<{wasm_heap_bytes: number}>;
  subscribe(fn: (message: Record<string, unknown>) => void): () => void;
  ensurePersistent(): Promise<boolean>;
  terminate(): void;
}

export declare function CreateScheduledEngine(modelId: string | null, options?: EngineOptions): Promise<ScheduledEngine>;
