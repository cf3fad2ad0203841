#include "idempay/http/credentials.hpp"

#include "idempay/base/crypto.hpp"

namespace idempay::http {

Status Credentials::add(std::string name, std::string app_key, const std::vector<std::string>& app_tokens,
                        bool test_suite_only) {
  std::vector<Digest> digests;
  for (const auto& token : app_tokens) {
    if (token.empty() && !test_suite_only) {
      return make_error(ErrorCode::kInvalidArgument, "merchant " + name + ": an appToken is empty");
    }
    digests.push_back(crypto::sha256(token));
  }
  return add_digests(std::move(name), std::move(app_key), std::move(digests), test_suite_only);
}

Status Credentials::add_hashed(std::string name, std::string app_key,
                               const std::vector<std::string>& token_sha256_hex, bool test_suite_only) {
  std::vector<Digest> digests;
  for (const auto& hex : token_sha256_hex) {
    Digest d{};
    if (!crypto::digest_from_hex(hex, d)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "merchant " + name + ": appTokenSha256 must be 64 hex digits");
    }
    digests.push_back(d);
  }
  return add_digests(std::move(name), std::move(app_key), std::move(digests), test_suite_only);
}

Status Credentials::add_digests(std::string name, std::string app_key, std::vector<Digest> digests,
                                bool test_suite_only) {
  if (name.empty() || (app_key.empty() && !test_suite_only)) {
    return make_error(ErrorCode::kInvalidArgument, "every merchant needs a name and an appKey");
  }
  if (digests.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "merchant " + name + " needs an appToken or appTokenSha256");
  }
  for (const Merchant& m : merchants_) {
    if (m.name == name) {
      return make_error(ErrorCode::kInvalidArgument, "merchant name " + name + " appears twice");
    }
    if (m.app_key == app_key) {
      return make_error(ErrorCode::kInvalidArgument, "appKey of merchant " + name + " is also merchant " +
                                                         m.name + "'s");
    }
  }
  merchants_.push_back(Merchant{std::move(name), std::move(app_key), std::move(digests), test_suite_only});
  return {};
}

std::string Credentials::authenticate(std::string_view app_key, std::string_view app_token,
                                      bool from_test_suite) const {
  // Hashing first makes the comparison length-independent; every token of every entry is
  // compared, so the time does not reveal which keys exist.
  auto presented = crypto::sha256(app_token);
  const Merchant* match = nullptr;
  for (const Merchant& m : merchants_) {
    bool token_ok = false;
    for (const Digest& d : m.token_sha256) {
      token_ok |= crypto::constant_time_equal(d, presented);
    }
    if (token_ok && m.app_key == app_key && match == nullptr && (from_test_suite || !m.test_suite_only)) {
      match = &m;
    }
  }
  return match != nullptr ? match->name : std::string();
}

std::string Credentials::authenticate_bearer(std::string_view token) const {
  auto presented = crypto::sha256(token);
  const Merchant* match = nullptr;
  for (const Merchant& m : merchants_) {
    bool token_ok = false;
    for (const Digest& d : m.token_sha256) {
      token_ok |= crypto::constant_time_equal(d, presented);
    }
    if (token_ok && match == nullptr && !m.test_suite_only) {
      match = &m;
    }
  }
  return match != nullptr && !token.empty() ? match->name : std::string();
}

std::vector<std::string> Credentials::names() const {
  std::vector<std::string> out;
  for (const Merchant& m : merchants_) {
    out.push_back(m.name);
  }
  return out;
}

}  // namespace idempay::http
