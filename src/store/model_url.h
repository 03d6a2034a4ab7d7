// Where a model's files live on the network: WebLLM's base-URL rule, made explicit.
//
// Rule (docs/store.md "URL resolution"):
//  1. Only absolute http:// or https:// URLs are accepted (BAD_REQUEST otherwise).
//  2. A trailing "/" is appended if missing.
//  3. If the path already ends in "/resolve/<branch>/", that is the base.
//  4. Else, if the URL is HuggingFace-style — host huggingface.co, hf.co (or a subdomain), or the origin of the
//     configured HF endpoint (EWGPU_HF_ENDPOINT, a mirror) — "resolve/main/" is appended.
//  5. Else the URL is a plain folder base (a CDN path, a static server): files are <base><file>.
// With an HF endpoint configured, huggingface.co URLs are rewritten onto it (same path), so a mirror or a
// loopback test server can stand in for the hub without changing catalogue URLs.
#pragma once

#include <string>

#include "base/error.h"

namespace ewgpu {

bool isHttpUrl(const std::string& s);

// The folder base for `model_url`; `hf_endpoint` is "" or an origin such as "http://127.0.0.1:8080".
Result<std::string> resolveModelBaseUrl(const std::string& model_url, const std::string& hf_endpoint = "");

// A model id derived from a URL: its last path segment before "/resolve/..." (e.g. ".../mlc-ai/X-MLC" -> "X-MLC").
std::string modelIdFromUrl(const std::string& model_url);

}  // namespace ewgpu
