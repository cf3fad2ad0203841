#pragma once
// The OAuth2 access token of one API Pix client (client credentials grant), shared by every
// payment: cached until shortly before it expires, fetched once for all the calls that need
// it meanwhile, forgotten when the PSP refuses it.
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "idempay/acquirers/bcb_pix.hpp"
#include "idempay/http/client.hpp"

namespace idempay::acquirer {

class TokenSource {
public:
  using Got = std::function<void(Result<std::string>)>;

  /// `client` and `options` must outlive this.
  TokenSource(http::Client& client, const BcbPixOptions& options) : client_(client), options_(options) {}

  /// Calls `done` with a valid token: at once when one is cached, else once the one request in
  /// flight (started now if none is) has answered, from the client's thread.
  void get(Got done);

  /// The PSP refused `token` (a 401): the next get() fetches another, unless one newer than it
  /// is already cached.
  void forget(const std::string& token);

  /// Token requests sent so far (metrics and tests).
  uint64_t requests() const;

private:
  void fetch();
  void finish(Result<std::pair<std::string, std::chrono::seconds>> fetched);

  http::Client& client_;
  const BcbPixOptions& options_;
  mutable std::mutex mutex_;  // guards what follows
  std::string token_;
  std::chrono::steady_clock::time_point valid_until_;
  bool fetching_ = false;
  std::vector<Got> waiting_;
  uint64_t requests_ = 0;
};

}  // namespace idempay::acquirer
