// EngineError: every failure of the page API, {code, message, detail} with the native engine's codes
// (NO_WEBGPU, NO_MODEL, UNKNOWN_MODEL, BAD_REQUEST, INVALID_MODEL_FOLDER, CACHE_INCOMPLETE, NETWORK_ERROR, ...).
// Its own module so that everything-webgpu.js and everything-webgpu-recipes.js both use it without a cycle.

export class EngineError extends Error {
  constructor(code, message, detail) {
    super(message || code);
    this.name = 'EngineError';
    this.code = code;
    this.detail = detail || {};
  }
}

// A worker's error object ({code, message, detail}) or anything thrown, as an EngineError.
export function toError(e) {
  if (e instanceof EngineError) return e;
  if (e && e.code) return new EngineError(e.code, e.message, e.detail);
  return new EngineError('INTERNAL', String(e && e.message || e));
}
