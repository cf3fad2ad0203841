#include "idempay/http/credentials.hpp"

#include <fstream>
#include <sstream>

#include "idempay/protocol/crypto.hpp"
#include "idempay/protocol/json_read.hpp"

namespace idempay::http {

Result<Credentials> Credentials::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return make_error(ErrorCode::kInvalidArgument, "cannot read credentials file " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  auto doc = JsonValue::parse(text.str());
  if (!doc) {
    return make_error(ErrorCode::kInvalidArgument, path + ": " + doc.error().message);
  }
  const JsonValue* merchants = doc->find("merchants");
  if (merchants == nullptr || merchants->type() != JsonValue::Type::kArray) {
    return make_error(ErrorCode::kInvalidArgument, path + ": expected a \"merchants\" array");
  }
  Credentials out;
  for (const JsonValue& m : merchants->items()) {
    std::string key = m.string_or("appKey");
    std::string name = m.string_or("name", key);
    if (key.empty()) {
      return make_error(ErrorCode::kInvalidArgument, path + ": every merchant needs an appKey");
    }
    if (const JsonValue* token = m.find("appToken"); token != nullptr) {
      out.add(name, key, token->text());
    } else if (auto s = out.add_hashed(name, key, m.string_or("appTokenSha256")); !s) {
      return make_error(ErrorCode::kInvalidArgument, path + ": " + s.error().message);
    }
  }
  return out;
}

void Credentials::add(std::string name, std::string app_key, std::string_view app_token) {
  merchants_.push_back(Merchant{std::move(name), std::move(app_key), crypto::sha256(app_token)});
}

Status Credentials::add_hashed(std::string name, std::string app_key,
                               std::string_view token_sha256_hex) {
  Merchant m{std::move(name), std::move(app_key), {}};
  if (!crypto::digest_from_hex(token_sha256_hex, m.token_sha256)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "merchant " + m.name + " needs appToken or a 64-hex-digit appTokenSha256");
  }
  merchants_.push_back(std::move(m));
  return {};
}

std::string Credentials::authenticate(std::string_view app_key, std::string_view app_token) const {
  // Hashing first makes the comparison length-independent; every entry is compared so the
  // time does not reveal which keys exist.
  auto presented = crypto::sha256(app_token);
  const Merchant* match = nullptr;
  for (const Merchant& m : merchants_) {
    bool token_ok = crypto::constant_time_equal(m.token_sha256, presented);
    if (token_ok && m.app_key == app_key && match == nullptr) {
      match = &m;
    }
  }
  return match != nullptr ? match->name : std::string();
}

}  // namespace idempay::http
