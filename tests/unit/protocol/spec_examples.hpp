#pragma once
// Request examples taken from the official OpenAPI document (tests/data/ppp-openapi.json).
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <simdjson.h>

namespace idempay::testing {

inline simdjson::dom::element load_spec() {
  static simdjson::dom::parser parser;
  static simdjson::padded_string json = simdjson::padded_string::load(IDEMPAY_SPEC_PATH);
  static simdjson::dom::element root = parser.parse(json);
  return root;
}

/// name -> minified JSON body of every Create Payment example in the spec.
inline std::map<std::string, std::string> create_payment_examples() {
  std::map<std::string, std::string> out;
  auto examples = load_spec()["paths"]["/payments"]["post"]["requestBody"]["content"]["application/json"]["examples"];
  for (auto [name, example] : simdjson::dom::object(examples)) {
    out.emplace(std::string(name), simdjson::minify(example["value"]));
  }
  return out;
}

/// Minified `example` of a schema under components/schemas.
inline std::string schema_example(const char* schema) {
  return simdjson::minify(load_spec()["components"]["schemas"][schema]["example"]);
}

/// An object built from the per-property `example`s of a schema.
inline std::string schema_property_examples(const char* schema) {
  std::string out = "{";
  for (auto [name, prop] : simdjson::dom::object(load_spec()["components"]["schemas"][schema]["properties"])) {
    simdjson::dom::element ex;
    if (prop["example"].get(ex) != simdjson::SUCCESS) {
      continue;
    }
    if (out.size() > 1) {
      out += ",";
    }
    out += "\"" + std::string(name) + "\":" + simdjson::minify(ex);
  }
  return out + "}";
}

}  // namespace idempay::testing
