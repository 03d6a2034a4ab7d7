#include "grammar/json_schema.h"

#include "grammar/matcher.h"

#include <functional>
#include <map>
#include <set>

namespace ewgpu::grammar {
namespace {

using json = nlohmann::json;
using B = GrammarBuilder;

constexpr int kMaxIndent = 16;
constexpr int kMaxIntDigits = 16, kMaxFracDigits = 16, kMaxExpDigits = 2;  // 16 digits e99 stays a finite double
constexpr int64_t kMaxArrayBound = 256;    // minItems / maxItems expand to that many rules
constexpr int64_t kMaxStringBound = 4096;  // minLength / maxLength
constexpr int kMaxDepth = 64;

ByteSet range(uint8_t lo, uint8_t hi) { return ByteSet{}.add(lo, hi); }
Seq one(const ByteSet& s) { return {B::bytes(s)}; }

// The keywords the compiler implements, and those that only annotate.
const std::set<std::string> kSupported = {"type",     "properties", "required",  "additionalProperties",
                                          "items",    "minItems",   "maxItems",  "enum",
                                          "const",    "anyOf",      "minLength", "maxLength",
                                          "format",   "$ref",       "$defs",     "definitions"};
const std::set<std::string> kAnnotations = {"title",   "description", "$schema",  "$id",      "$comment",
                                            "default", "examples",    "deprecated", "readOnly", "writeOnly"};

class Compiler {
 public:
  Compiler(const json& root, std::string field) : root_(root), field_(std::move(field)) {}

  Result<Grammar> run() {
    const uint32_t top = b_.newRule("root");
    Seq body;
    EWGPU_TRY(schema(root_, "", 0, body));
    b_.addAlt(top, body);
    return b_.build(top);
  }

  Grammar objectOnly() {
    const uint32_t top = b_.newRule("root");
    b_.addAlt(top, {anyObject()});
    return b_.build(top);
  }

 private:
  Error bad(const std::string& path, const std::string& keyword, const std::string& message) {
    json d = {{"field", field_}, {"path", path.empty() ? "/" : path}};
    if (!keyword.empty()) d["keyword"] = keyword;
    return makeError(ErrorCode::kBadRequest, field_ + (path.empty() ? "" : path) + ": " + message, d);
  }

  // ---- shared rules, made on first use ----
  Sym cached(const std::string& name, const std::function<Sym()>& make) {
    auto it = shared_.find(name);
    if (it != shared_.end()) return it->second;
    Sym s = make();
    shared_[name] = s;
    return s;
  }
  // Between lexemes: nothing, one space, or a newline and an indent of up to 16 spaces (pretty-printed JSON).
  Sym ws() {
    return cached("ws", [&] {
      Sym indent = b_.repeat("indent", B::literal(" "), 0, kMaxIndent);
      return b_.choice("ws", {{}, B::literal(" "), {B::byte('\n'), indent}});
    });
  }
  Sym hex() {
    return cached("hex", [&] { return b_.choice("hex", {one(range('0', '9').add('a', 'f').add('A', 'F'))}); });
  }
  // One character of a JSON string: unescaped (valid UTF-8, no control character, no quote or backslash) or
  // an escape sequence.
  Sym stringChar() {
    return cached("char", [&] {
      const ByteSet ascii = range(0x20, 0x21).add(0x23, 0x5B).add(0x5D, 0x7F);
      const ByteSet cont = range(0x80, 0xBF);
      std::vector<Seq> alts = {
          one(ascii),
          {B::bytes(range(0xC2, 0xDF)), B::bytes(cont)},
          {B::byte(0xE0), B::bytes(range(0xA0, 0xBF)), B::bytes(cont)},
          {B::bytes(range(0xE1, 0xEC)), B::bytes(cont), B::bytes(cont)},
          {B::byte(0xED), B::bytes(range(0x80, 0x9F)), B::bytes(cont)},
          {B::bytes(range(0xEE, 0xEF)), B::bytes(cont), B::bytes(cont)},
          {B::byte(0xF0), B::bytes(range(0x90, 0xBF)), B::bytes(cont), B::bytes(cont)},
          {B::bytes(range(0xF1, 0xF3)), B::bytes(cont), B::bytes(cont), B::bytes(cont)},
          {B::byte(0xF4), B::bytes(range(0x80, 0x8F)), B::bytes(cont), B::bytes(cont)},
          {B::byte('\\'), B::bytes(ByteSet{}.add('"').add('\\').add('/').add('b').add('f').add('n').add('r').add('t'))},
          {B::byte('\\'), B::byte('u'), hex(), hex(), hex(), hex()},
      };
      return b_.choice("char", alts);
    });
  }
  Sym string(uint32_t min, int64_t max) {
    const std::string name = "string{" + std::to_string(min) + "," + std::to_string(max) + "}";
    return cached(name, [&] {
      Sym body = b_.repeat(name + ".chars", {stringChar()}, min, max);
      return b_.choice(name, {B::cat({B::literal("\""), {body}, B::literal("\"")})});
    });
  }
  Sym digits(const std::string& name, uint32_t min, int64_t max) {
    return cached(name, [&] { return b_.repeat(name, one(range('0', '9')), min, max); });
  }
  Sym integerPart() {
    return cached("int", [&] {
      return b_.choice("int", {B::literal("0"), {B::bytes(range('1', '9')), digits("digits{0,15}", 0, kMaxIntDigits - 1)}});
    });
  }
  Sym integer() {
    return cached("integer", [&] {
      return b_.choice("integer", {{b_.optional("minus", B::literal("-")), integerPart()}});
    });
  }
  Sym number() {
    return cached("number", [&] {
      Sym frac = b_.optional("frac", B::cat({B::literal("."), {digits("digits{1,16}", 1, kMaxFracDigits)}}));
      Sym sign = b_.optional("exp.sign", one(ByteSet{}.add('+').add('-')));
      Sym exp = b_.optional("exp", {B::bytes(ByteSet{}.add('e').add('E')), sign, digits("digits{1,2}", 1, kMaxExpDigits)});
      return b_.choice("number", {{b_.optional("minus", B::literal("-")), integerPart(), frac, exp}});
    });
  }
  Sym anyValue() {
    auto it = shared_.find("value");
    if (it != shared_.end()) return it->second;
    const uint32_t v = b_.newRule("value");  // recursive: registered before its body
    shared_["value"] = B::ref(v);
    b_.addAlt(v, {anyObject()});
    b_.addAlt(v, {anyArray()});
    b_.addAlt(v, {string(0, -1)});
    b_.addAlt(v, {number()});
    b_.addAlt(v, B::literal("true"));
    b_.addAlt(v, B::literal("false"));
    b_.addAlt(v, B::literal("null"));
    return B::ref(v);
  }
  // {"k": v, ...} with any keys and values: '{' ws (member ws (',' ws member ws)*)? '}'.
  Sym anyObject() {
    auto it = shared_.find("object");
    if (it != shared_.end()) return it->second;
    const uint32_t o = b_.newRule("object");
    shared_["object"] = B::ref(o);
    Seq member = {string(0, -1), ws(), B::byte(':'), ws(), anyValue(), ws()};
    Sym body = b_.separated("object.members", member, {B::byte(','), ws()}, 0, -1);
    b_.addAlt(o, {B::byte('{'), ws(), body, B::byte('}')});
    return B::ref(o);
  }
  Sym anyArray() {
    auto it = shared_.find("array");
    if (it != shared_.end()) return it->second;
    const uint32_t a = b_.newRule("array");
    shared_["array"] = B::ref(a);
    Sym body = b_.separated("array.items", {anyValue(), ws()}, {B::byte(','), ws()}, 0, -1);
    b_.addAlt(a, {B::byte('['), ws(), body, B::byte(']')});
    return B::ref(a);
  }

  // ---- formats ----
  Sym date() {
    return cached("date", [&] {
      const ByteSet d = range('0', '9');
      Sym month = b_.choice("month", {{B::byte('0'), B::bytes(range('1', '9'))}, {B::byte('1'), B::bytes(range('0', '2'))}});
      Sym day = b_.choice("day", {{B::byte('0'), B::bytes(range('1', '9'))},
                                  {B::bytes(range('1', '2')), B::bytes(d)},
                                  {B::byte('3'), B::bytes(range('0', '1'))}});
      return b_.choice("date", {{B::bytes(d), B::bytes(d), B::bytes(d), B::bytes(d), B::byte('-'), month, B::byte('-'), day}});
    });
  }
  Sym time() {
    return cached("time", [&] {
      const ByteSet d = range('0', '9');
      Sym hour = b_.choice("hour", {{B::bytes(range('0', '1')), B::bytes(d)}, {B::byte('2'), B::bytes(range('0', '3'))}});
      Seq minute = {B::bytes(range('0', '5')), B::bytes(d)};
      Sym offset = b_.choice("offset", {B::literal("Z"), B::cat({one(ByteSet{}.add('+').add('-')), {hour}, B::literal(":"), minute})});
      return b_.choice("time", {B::cat({{hour}, B::literal(":"), minute, B::literal(":"), minute, {offset}})});
    });
  }
  Result<Sym> format(const std::string& f, const std::string& path) {
    Seq body;
    if (f == "date") body = {date()};
    else if (f == "time") body = {time()};
    else if (f == "date-time") body = {date(), B::byte('T'), time()};
    else if (f == "uuid") {
      for (int group : {8, 4, 4, 4, 12}) {
        if (!body.empty()) body.push_back(B::byte('-'));
        for (int i = 0; i < group; ++i) body.push_back(hex());
      }
    } else {
      return bad(path + "/format", "format", "unsupported string format \"" + f + "\" (date, time, date-time, uuid)");
    }
    return cached("format." + f, [&] { return b_.choice("format." + f, {B::cat({B::literal("\""), body, B::literal("\"")})}); });
  }

  // ---- schemas ----
  Status bound(const json& s, const char* k, const std::string& path, int64_t cap, int64_t& out) {
    if (!s.contains(k)) return {};
    const json& v = s[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return bad(path + "/" + k, k, std::string(k) + " must be a non-negative integer");
    if (v.get<int64_t>() > cap)
      return bad(path + "/" + k, k, std::string(k) + " above " + std::to_string(cap) + " is not supported");
    out = v.get<int64_t>();
    return {};
  }

  static bool matchesType(const json& v, const std::string& t) {
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == (double)(int64_t)v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    return false;
  }

  Status schema(const json& s, const std::string& path, int depth, Seq& out) {
    if (depth > kMaxDepth) return bad(path, "", "schema nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (s.is_boolean()) {
      if (!s.get<bool>()) return bad(path, "", "the schema false accepts no document");
      out = {anyValue()};
      return {};
    }
    if (!s.is_object()) return bad(path, "", "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      if (kSupported.count(k) || kAnnotations.count(k)) continue;
      if (k == "uniqueItems" && v == false) continue;
      return bad(path + "/" + k, k, "unsupported JSON Schema keyword \"" + k + "\"");
    }
    if (s.contains("$ref")) {
      if (s.size() > 1)
        for (const auto& [k, v] : s.items())
          if (k != "$ref" && !kAnnotations.count(k) && k != "$defs" && k != "definitions")
            return bad(path + "/" + k, k, "\"" + k + "\" beside \"$ref\" is not supported");
      Sym r;
      EWGPU_TRY(ref(s["$ref"], path + "/$ref", depth, r));
      out = {r};
      return {};
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array() && !t.empty())
        for (const auto& x : t) {
          if (!x.is_string()) return bad(path + "/type", "type", "type must be a string or a list of strings");
          types.push_back(x.get<std::string>());
        }
      else return bad(path + "/type", "type", "type must be a string or a non-empty list of strings");
      static const std::set<std::string> known = {"null", "boolean", "integer", "number", "string", "array", "object"};
      for (const auto& x : types)
        if (!known.count(x)) return bad(path + "/type", "type", "unknown type \"" + x + "\"");
    }
    auto typeOk = [&](const json& v) {
      if (types.empty()) return true;
      for (const auto& t : types)
        if (matchesType(v, t)) return true;
      return false;
    };
    if (s.contains("const")) {
      if (!typeOk(s["const"])) return bad(path + "/const", "const", "the const value does not match the type");
      out = B::literal(s["const"].dump());
      return {};
    }
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) return bad(path + "/enum", "enum", "enum must be a non-empty list");
      std::vector<Seq> alts;
      for (const auto& v : e)
        if (typeOk(v)) alts.push_back(B::literal(v.dump()));
      if (alts.empty()) return bad(path + "/enum", "enum", "no enum value matches the type");
      out = {b_.choice("enum" + path, alts)};
      return {};
    }
    if (s.contains("anyOf")) {
      const json& a = s["anyOf"];
      if (!a.is_array() || a.empty()) return bad(path + "/anyOf", "anyOf", "anyOf must be a non-empty list of schemas");
      for (const auto& [k, v] : s.items())
        if (k != "anyOf" && !kAnnotations.count(k) && k != "$defs" && k != "definitions")
          return bad(path + "/" + k, k, "\"" + k + "\" beside \"anyOf\" is not supported");
      std::vector<Seq> alts;
      for (size_t i = 0; i < a.size(); ++i) {
        Seq sub;
        EWGPU_TRY(schema(a[i], path + "/anyOf/" + std::to_string(i), depth + 1, sub));
        alts.push_back(sub);
      }
      out = {b_.choice("anyOf" + path, alts)};
      return {};
    }
    if (types.empty()) {  // the type the keywords imply, else any value
      if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) types = {"object"};
      else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) types = {"array"};
      else if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) types = {"string"};
      else {
        out = {anyValue()};
        return {};
      }
    }
    std::vector<Seq> alts;
    for (const auto& t : types) {
      Seq one_type;
      EWGPU_TRY(typed(s, t, path, depth, one_type));
      alts.push_back(one_type);
    }
    out = alts.size() == 1 ? alts[0] : Seq{b_.choice("types" + path, alts)};
    return {};
  }

  Status typed(const json& s, const std::string& t, const std::string& path, int depth, Seq& out) {
    if (t == "null") out = B::literal("null");
    else if (t == "boolean") out = {b_.choice("boolean", {B::literal("true"), B::literal("false")})};
    else if (t == "integer") out = {integer()};
    else if (t == "number") out = {number()};
    else if (t == "string") {
      int64_t lo = 0, hi = -1;
      EWGPU_TRY(bound(s, "minLength", path, kMaxStringBound, lo));
      EWGPU_TRY(bound(s, "maxLength", path, kMaxStringBound, hi));
      if (hi >= 0 && hi < lo) return bad(path + "/maxLength", "maxLength", "maxLength is below minLength");
      if (s.contains("format")) {
        if (!s["format"].is_string()) return bad(path + "/format", "format", "format must be a string");
        if (s.contains("minLength") || s.contains("maxLength"))
          return bad(path + "/format", "format", "format together with minLength/maxLength is not supported");
        Sym f;
        EWGPU_ASSIGN(f, format(s["format"].get<std::string>(), path));
        out = {f};
      } else {
        out = {string((uint32_t)lo, hi)};
      }
    } else if (t == "array") {
      int64_t lo = 0, hi = -1;
      EWGPU_TRY(bound(s, "minItems", path, kMaxArrayBound, lo));
      EWGPU_TRY(bound(s, "maxItems", path, kMaxArrayBound, hi));
      if (hi >= 0 && hi < lo) return bad(path + "/maxItems", "maxItems", "maxItems is below minItems");
      Seq item = {anyValue()};
      if (s.contains("items")) {
        if (s["items"].is_array()) return bad(path + "/items", "items", "items as a list (tuple form) is not supported");
        EWGPU_TRY(schema(s["items"], path + "/items", depth + 1, item));
      }
      item.push_back(ws());
      Sym body = b_.separated("items" + path, item, {B::byte(','), ws()}, (uint32_t)lo, hi);
      out = {B::byte('['), ws(), body, B::byte(']')};
    } else if (t == "object") {
      EWGPU_TRY(object(s, path, depth, out));
    }
    return {};
  }

  // '{' ws F_0 '}' over the properties p_0..p_{n-1} (in key order), where member_i = "name" ws ':' ws value ws;
  // F_i: nothing written yet, S_i: something written (the next member needs a comma).
  //   F_i = member_i S_{i+1}            (required)   | member_i S_{i+1} | F_{i+1}          (optional)
  //   S_i = ',' ws member_i S_{i+1}     (required)   | ',' ws member_i S_{i+1} | S_{i+1}   (optional)
  //   F_n = ε | extra ws S_n,  S_n = (',' ws extra ws)*   with additional properties, else F_n = S_n = ε.
  Status object(const json& s, const std::string& path, int depth, Seq& out) {
    json props = json::object();
    if (s.contains("properties")) {
      props = s["properties"];
      if (!props.is_object()) return bad(path + "/properties", "properties", "properties must be an object");
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) return bad(path + "/required", "required", "required must be a list of names");
      for (const auto& x : r) {
        if (!x.is_string()) return bad(path + "/required", "required", "required must be a list of names");
        if (!props.contains(x.get<std::string>()))
          return bad(path + "/required", "required",
                     "required names \"" + x.get<std::string>() + "\", which is not in properties");
        required.insert(x.get<std::string>());
      }
    }
    // Extra members: additionalProperties true or a schema; absent means none when properties are listed and any
    // when they are not.
    bool extra = !s.contains("properties");
    Seq extra_value = {anyValue()};
    if (s.contains("additionalProperties")) {
      const json& ap = s["additionalProperties"];
      if (ap.is_boolean()) extra = ap.get<bool>();
      else if (ap.is_object()) {
        extra = true;
        EWGPU_TRY(schema(ap, path + "/additionalProperties", depth + 1, extra_value));
      } else {
        return bad(path + "/additionalProperties", "additionalProperties", "must be a boolean or a schema");
      }
    }
    std::vector<std::pair<std::string, Seq>> members;
    for (const auto& [name, sub] : props.items()) {
      Seq v;
      EWGPU_TRY(schema(sub, path + "/properties/" + name, depth + 1, v));
      members.push_back({name, B::cat({B::literal(json(name).dump()), {ws(), B::byte(':'), ws()}, v, {ws()}})});
    }
    const size_t n = members.size();
    std::vector<uint32_t> F(n + 1), S(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      F[i] = b_.newRule("obj" + path + ".F" + std::to_string(i));
      S[i] = b_.newRule("obj" + path + ".S" + std::to_string(i));
    }
    if (extra) {
      Seq member = B::cat({{string(0, -1), ws(), B::byte(':'), ws()}, extra_value, {ws()}});
      Sym more = b_.repeat("obj" + path + ".extra", B::cat({{B::byte(','), ws()}, member}), 0, -1);
      b_.addAlt(S[n], {more});
      b_.addAlt(F[n], {});
      b_.addAlt(F[n], B::cat({member, {more}}));
    } else {
      b_.addAlt(S[n], {});
      b_.addAlt(F[n], {});
    }
    for (size_t i = n; i-- > 0;) {
      const Seq& m = members[i].second;
      const bool req = required.count(members[i].first) > 0;
      b_.addAlt(F[i], B::cat({m, {B::ref(S[i + 1])}}));
      b_.addAlt(S[i], B::cat({{B::byte(','), ws()}, m, {B::ref(S[i + 1])}}));
      if (!req) {
        b_.addAlt(F[i], {B::ref(F[i + 1])});
        b_.addAlt(S[i], {B::ref(S[i + 1])});
      }
    }
    out = {B::byte('{'), ws(), B::ref(F[0]), B::byte('}')};
    return {};
  }

  Status ref(const json& r, const std::string& path, int depth, Sym& out) {
    if (!r.is_string()) return bad(path, "$ref", "$ref must be a string");
    const std::string target = r.get<std::string>();
    auto it = refs_.find(target);
    if (it != refs_.end()) {
      out = B::ref(it->second);
      return {};
    }
    if (target.empty() || target[0] != '#')
      return bad(path, "$ref", "only references inside the schema (\"#...\") are supported: " + target);
    const json* node = nullptr;
    try {
      const json::json_pointer ptr(target.substr(1));
      if (root_.contains(ptr)) node = &root_.at(ptr);
    } catch (const std::exception&) {
    }
    if (!node) return bad(path, "$ref", "$ref " + target + " points at nothing in the schema");
    const uint32_t rule = b_.newRule("ref" + target);
    refs_[target] = rule;  // before compiling the target: a recursive schema refers back to this rule
    Seq body;
    EWGPU_TRY(schema(*node, target.substr(1), depth + 1, body));
    b_.addAlt(rule, body);
    out = B::ref(rule);
    return {};
  }

  const json& root_;
  std::string field_;
  GrammarBuilder b_;
  std::map<std::string, Sym> shared_;
  std::map<std::string, uint32_t> refs_;
};

}  // namespace

Grammar jsonObjectGrammar() {
  static const json empty = json::object();
  return Compiler(empty, "response_format").objectOnly();
}

Result<Grammar> compileJsonSchema(const nlohmann::json& schema, const std::string& field) {
  auto g = Compiler(schema, field).run();
  if (!g) return g;
  auto c = std::make_shared<CompiledGrammar>();
  c->grammar = *g;
  if (Matcher(c).dead())  // e.g. {"$ref": "#"}: a rule that only refers to itself
    return makeError(ErrorCode::kBadRequest, field + ": the schema accepts no document", {{"field", field}, {"path", "/"}});
  return g;
}

}  // namespace ewgpu::grammar
