#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"

namespace idempay::http {

/// `http[s]://host[:port]/path?query`, parsed strictly (RFC 3986): a host name of letters,
/// digits, '-' and '.', an IPv4 literal or a bracketed IPv6 literal; no user information; a
/// port of 1-65535; path and query of URI characters only, '%' followed by two hex digits.
/// Control characters, spaces, non-ASCII bytes and `"<>\^`{|}` are refused anywhere, so no
/// parsed URL can end a request line or add a header. A fragment is dropped.
struct Url {
  bool tls = false;
  std::string host;  ///< lower case, without brackets for IPv6 literals
  std::string port = "80";
  std::string target = "/";  ///< path and query exactly as given; "/" if empty
  bool host_is_ip = false;   ///< the host is an IP literal, not a name

  static Result<Url> parse(std::string_view url);
  /// The Host header value: host, plus the port when it is not the scheme's default.
  std::string host_header() const;
};

/// True if `target` can be sent as a request target: it starts with '/' and holds only
/// URI characters (what Url::parse accepts after the authority).
bool is_safe_target(std::string_view target);

/// `text` percent-encoded but for RFC 3986's unreserved characters (letters, digits, "-._~"):
/// fit for a path segment and for a form or query value.
std::string percent_encoded(std::string_view text);

/// True if `value` can be sent as a header value: no CR, LF, NUL or other control
/// character except horizontal tab.
bool is_safe_header_value(std::string_view value);

/// Host names an outbound request may go to: `--callback-allowed-hosts` and the like.
/// An entry matches a host exactly (case-insensitively); an entry starting with '.' matches
/// every subdomain of that domain (".vtexpayments.com.br" matches "a.vtexpayments.com.br",
/// not "vtexpayments.com.br" itself); an IP literal matches only the same address.
class HostAllowlist {
public:
  HostAllowlist() = default;
  /// Comma-separated entries; blanks around entries are ignored. kInvalidArgument for an
  /// entry that is not a host name, a '.'-prefixed domain or an IP literal.
  static Result<HostAllowlist> parse(std::string_view list);

  bool allows(const Url& url) const;
  bool empty() const { return entries_.empty(); }
  const std::vector<std::string>& entries() const { return entries_; }

private:
  std::vector<std::string> entries_;  ///< lower case; IP literals in canonical form
};

/// Rules for a URL taken from a request that idempay will later call (a callbackUrl, a
/// Secure Proxy URL).
struct DestinationRules {
  HostAllowlist allowed_hosts;
  /// Also permit plain http and IP literals that are not public (local tests). Never lifts
  /// the allowlist. Default: false
  bool allow_private = false;
};

/// Parses `url` and checks it against `rules`: https (unless allow_private), a host on the
/// allowlist, and no non-public IP literal (unless allow_private). kInvalidArgument with a
/// message naming what is wrong, kForbidden for a valid URL the rules do not permit.
Result<Url> check_destination(std::string_view url, const DestinationRules& rules);

}  // namespace idempay::http
