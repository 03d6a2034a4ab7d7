// WebLLM-compatible model base-URL resolution (see model_url.h for the rule).
#include "store/model_url.h"

#include <algorithm>
#include <cctype>

namespace ewgpu {
namespace {

struct UrlParts {
  std::string scheme, host, path;  // path starts with "/" (or is empty)
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  return s;
}

bool splitUrl(const std::string& url, UrlParts& out) {
  size_t colon = url.find("://");
  if (colon == std::string::npos) return false;
  out.scheme = lower(url.substr(0, colon));
  size_t host_start = colon + 3;
  size_t slash = url.find('/', host_start);
  out.host = url.substr(host_start, slash == std::string::npos ? std::string::npos : slash - host_start);
  out.path = slash == std::string::npos ? "" : url.substr(slash);
  return !out.host.empty() && (out.scheme == "http" || out.scheme == "https");
}

std::string hostName(const std::string& host) {  // without ":port" and userinfo
  std::string h = host.substr(host.find('@') == std::string::npos ? 0 : host.find('@') + 1);
  return lower(h.substr(0, h.find(':')));
}

bool isHubHost(const std::string& host) {
  std::string h = hostName(host);
  auto endsWith = [&](const std::string& s) {
    return h.size() >= s.size() && h.compare(h.size() - s.size(), s.size(), s) == 0;
  };
  return h == "huggingface.co" || h == "hf.co" || endsWith(".huggingface.co") || endsWith(".hf.co");
}

// True if path ends with "/resolve/<branch>/".
bool endsWithResolveBranch(const std::string& path) {
  if (path.size() < 2 || path.back() != '/') return false;
  size_t branch_start = path.rfind('/', path.size() - 2);
  if (branch_start == std::string::npos || branch_start + 1 >= path.size() - 1) return false;
  const std::string marker = "/resolve";
  return branch_start >= marker.size() && path.compare(branch_start - marker.size(), marker.size(), marker) == 0;
}

}  // namespace

bool isHttpUrl(const std::string& s) {
  UrlParts p;
  return splitUrl(s, p);
}

Result<std::string> resolveModelBaseUrl(const std::string& model_url, const std::string& hf_endpoint) {
  UrlParts p;
  if (!splitUrl(model_url, p))
    return makeError(ErrorCode::kBadRequest, "model URL must be absolute http(s): " + model_url, {{"url", model_url}});
  std::string endpoint = hf_endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  UrlParts e;
  bool have_endpoint = !endpoint.empty() && splitUrl(endpoint, e);
  bool hub_style = isHubHost(p.host) || (have_endpoint && lower(e.host) == lower(p.host) && e.scheme == p.scheme);
  std::string origin = p.scheme + "://" + p.host;
  if (have_endpoint && isHubHost(p.host)) origin = endpoint;  // mirror / loopback stand-in for the hub
  std::string path = p.path;
  if (path.empty() || path.back() != '/') path += '/';
  if (!endsWithResolveBranch(path) && hub_style) path += "resolve/main/";
  return origin + path;
}

std::string modelIdFromUrl(const std::string& model_url) {
  UrlParts p;
  if (!splitUrl(model_url, p)) return "";
  std::string path = p.path;
  size_t resolve = path.find("/resolve/");
  if (resolve != std::string::npos) path = path.substr(0, resolve);
  while (!path.empty() && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  std::string last = slash == std::string::npos ? path : path.substr(slash + 1);
  return last.empty() ? hostName(p.host) : last;
}

}  // namespace ewgpu
