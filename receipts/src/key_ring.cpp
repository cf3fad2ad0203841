#include "idempay/receipts/key_ring.hpp"

#include <algorithm>
#include <filesystem>

#include "idempay/base/json_read.hpp"
#include "idempay/base/json_writer.hpp"
#include "idempay/domain/records.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/signing/jose.hpp"

namespace idempay::receipts {

namespace {

constexpr std::string_view kPrefix = "signing-key/";
constexpr size_t kMaxKeys = 10'000;

}  // namespace

std::string development_key_path(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "dev-signing-key.pem").string();
}

std::string published_key_name(const std::string& kid) { return std::string(kPrefix) + kid; }

Status publish(storage::Store& store, const signing::PublicKey& key) {
  JsonWriter w;
  w.begin_object().key("x").string(signing::base64url(key.raw)).key("since").number(domain::now_unix_ms()).end_object();
  auto put = store.commit_and_wait({{domain::Space::kMeta, published_key_name(key.kid), std::move(w).take(), 0}});
  if (!put && put.error().code != ErrorCode::kConflict) {  // a conflict: published already
    return tl::unexpected(put.error());
  }
  return {};
}

Result<std::vector<signing::PublicKey>> published_keys(storage::Store& store) {
  auto rows = store.scan(domain::Space::kMeta, kPrefix, kMaxKeys);
  if (!rows) {
    return tl::unexpected(rows.error());
  }
  std::vector<std::pair<int64_t, signing::PublicKey>> keys;
  for (const auto& [name, stored] : *rows) {
    auto json = JsonValue::parse(stored.value);
    auto raw = json ? signing::from_base64url(json->string_or("x")) : Result<std::string>(tl::unexpected(Error{}));
    auto key = raw ? signing::public_key_from_raw(*raw) : Result<signing::PublicKey>(tl::unexpected(Error{}));
    if (!key || published_key_name(key->kid) != name) {
      return make_error(ErrorCode::kInternal, "the published key " + name + " is not one this idempay wrote");
    }
    keys.emplace_back(json->int_or("since"), std::move(*key));
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<signing::PublicKey> out;
  for (auto& [since, key] : keys) {
    out.push_back(std::move(key));
  }
  return out;
}

std::optional<std::string> AnchorCache::fresh() const {
  std::lock_guard lock(mutex_);
  if (!filled_ || std::chrono::steady_clock::now() - read_at_ > max_age_) {
    return std::nullopt;
  }
  return jwk_set_;
}

void AnchorCache::fill(std::string jwk_set) {
  std::lock_guard lock(mutex_);
  jwk_set_ = std::move(jwk_set);
  read_at_ = std::chrono::steady_clock::now();
  filled_ = true;
}

}  // namespace idempay::receipts
