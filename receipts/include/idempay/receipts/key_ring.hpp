#pragma once
// An instance's signing keys. The key in force signs; every public key that ever signed is
// kept in the store (meta "signing-key/<kid>"), so that the anchor — the JWK Set published at
// /.well-known/jwks.json — lists the keys of every instance sharing the store, in force or
// retired: a receipt signed before a rotation verifies for ever.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "idempay/signing/ed25519.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::receipts {

/// Where an instance without --signing-key keeps the key it generated (development only).
std::string development_key_path(const std::string& data_dir);

/// The meta key under which a public key is kept.
std::string published_key_name(const std::string& kid);

/// Records `key` among the published keys, once (a put-if-absent: a key already there keeps
/// its first record). Blocking: for start-up and reloads, never an I/O thread.
Status publish(storage::Store& store, const signing::PublicKey& key);

/// Every published key, oldest first.
Result<std::vector<signing::PublicKey>> published_keys(storage::Store& store);

/// The key in force, swapped whole on a reload. Thread-safe.
class KeyRing {
public:
  explicit KeyRing(signing::SigningKey active) : active_(std::make_shared<signing::SigningKey>(std::move(active))) {}

  std::shared_ptr<const signing::SigningKey> active() const {
    std::lock_guard lock(mutex_);
    return active_;
  }
  void replace(signing::SigningKey next) {
    auto key = std::make_shared<signing::SigningKey>(std::move(next));
    std::lock_guard lock(mutex_);
    active_ = std::move(key);
  }

private:
  mutable std::mutex mutex_;
  std::shared_ptr<const signing::SigningKey> active_;
};

/// The anchor's JSON as last read from the store, read again when older than `max_age`:
/// the endpoint is public, and a request must not cost a store scan.
class AnchorCache {
public:
  explicit AnchorCache(std::chrono::milliseconds max_age) : max_age_(max_age) {}
  /// The JWK Set if read within max_age, else nullopt (the caller reads and calls `fill`).
  std::optional<std::string> fresh() const;
  void fill(std::string jwk_set);

private:
  std::chrono::milliseconds max_age_;
  mutable std::mutex mutex_;
  std::string jwk_set_;
  std::chrono::steady_clock::time_point read_at_{};
  bool filled_ = false;
};

}  // namespace idempay::receipts
