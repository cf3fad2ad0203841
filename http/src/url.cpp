// Strict URL parsing and the destination rules for URLs taken from requests. Everything a
// request line or header could be split with is refused here, once, before a URL is stored.
#include "idempay/http/url.hpp"

#include "ascii.hpp"

#include <algorithm>

#include <boost/asio/ip/address.hpp>

#include "idempay/http/address_policy.hpp"

namespace idempay::http {

namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// RFC 3986 pchar plus '/' and '?': unreserved, sub-delims, ':' and '@'; '%' is checked apart.
bool is_uri_char(char c) {
  if (is_alpha(c) || is_digit(c)) {
    return true;
  }
  switch (c) {
    case '-': case '.': case '_': case '~':                          // unreserved
    case '!': case '$': case '&': case '\'': case '(': case ')':     // sub-delims
    case '*': case '+': case ',': case ';': case '=':
    case ':': case '@': case '/': case '?':
      return true;
    default:
      return false;
  }
}

// Path, query or fragment characters, with every '%' starting a two-hex-digit escape.
bool is_uri_text(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!is_uri_char(s[i])) {
      return false;
    }
  }
  return true;
}

// A DNS name: labels of letters, digits and inner hyphens, 1-63 bytes each, 253 in all.
bool is_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253) {
    return false;
  }
  size_t label = 0;
  for (size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      if (label == 0 || label > 63 || host[i - 1] == '-' || host[i - label] == '-') {
        return false;
      }
      label = 0;
    } else if (is_alpha(host[i]) || is_digit(host[i]) || host[i] == '-') {
      ++label;
    } else {
      return false;
    }
  }
  return true;
}

// The canonical text of an IP literal, empty if `text` is not one. Only the dotted-quad
// IPv4 form is an IPv4 literal; "2130706433" or "0x7f.1" are host names that will never
// match an allowlist entry and are checked again by address on connect.
std::string canonical_ip(std::string_view text) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) {
    return {};
  }
  return address.to_string();
}

bool is_dotted_quad(std::string_view s) {
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (!is_digit(c)) {
      return false;
    }
  }
  return dots == 3;
}

Error invalid(std::string message) { return Error{ErrorCode::kInvalidArgument, std::move(message)}; }

Result<std::string> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), is_digit)) {
    return tl::unexpected(invalid("URL needs a numeric port of 1-65535"));
  }
  int port = std::stoi(std::string(text));
  if (port < 1 || port > 65535) {
    return tl::unexpected(invalid("URL needs a numeric port of 1-65535"));
  }
  return std::to_string(port);
}

}  // namespace

Result<Url> Url::parse(std::string_view url) {
  Url out;
  auto colon = url.find("://");
  std::string scheme = ascii_lower(url.substr(0, colon == std::string_view::npos ? 0 : colon));
  if (scheme == "https") {
    out.tls = true;
    out.port = "443";
  } else if (scheme != "http") {
    return make_error(ErrorCode::kInvalidArgument, "URL must start with http:// or https://");
  }
  url.remove_prefix(colon + 3);
  auto end = url.find_first_of("/?#");
  std::string_view authority = url.substr(0, end);
  std::string_view rest = end == std::string_view::npos ? std::string_view() : url.substr(end);
  if (authority.find('@') != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidArgument, "URLs with user information are refused");
  }
  std::string_view host;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return make_error(ErrorCode::kInvalidArgument, "bad IPv6 literal in URL");
    }
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return make_error(ErrorCode::kInvalidArgument, "bad URL authority");
    }
    port = after.empty() ? std::string_view() : after.substr(1);
    if (host.find(':') == std::string_view::npos || canonical_ip(host).empty()) {
      return make_error(ErrorCode::kInvalidArgument, "bad IPv6 literal in URL");
    }
    out.host = canonical_ip(host);
    out.host_is_ip = true;
    if (after.empty()) {
      port = out.port;
    }
  } else {
    auto c = authority.rfind(':');
    host = authority.substr(0, c);
    port = c == std::string_view::npos ? std::string_view(out.port) : authority.substr(c + 1);
    if (is_dotted_quad(host)) {
      out.host = canonical_ip(host);
      out.host_is_ip = true;
      if (out.host.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "bad IPv4 literal in URL");
      }
    } else if (is_host_name(host)) {
      out.host = ascii_lower(host);
    } else {
      return make_error(ErrorCode::kInvalidArgument, "URL needs a valid host name");
    }
  }
  auto parsed_port = parse_port(port);
  if (!parsed_port) {
    return tl::unexpected(parsed_port.error());
  }
  out.port = std::move(*parsed_port);
  auto fragment = rest.find('#');
  std::string_view fragment_text = fragment == std::string_view::npos ? std::string_view() : rest.substr(fragment + 1);
  rest = rest.substr(0, fragment);
  if (!is_uri_text(rest) || !is_uri_text(fragment_text)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "URL holds a character that must be percent-encoded (space, control, quote, ...)");
  }
  out.target = rest.empty() ? "/" : (rest.front() == '?' ? "/" + std::string(rest) : std::string(rest));
  return out;
}

std::string Url::host_header() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  bool default_port = (tls && port == "443") || (!tls && port == "80");
  return default_port ? h : h + ":" + port;
}

bool is_safe_target(std::string_view target) {
  return !target.empty() && target.front() == '/' && target.find('#') == std::string_view::npos &&
         is_uri_text(target);
}

std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 0xF]};
    }
  }
  return out;
}

bool is_safe_header_value(std::string_view value) {
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return false;
    }
  }
  return true;
}

// -- allowlist --------------------------------------------------------------------------------

Result<HostAllowlist> HostAllowlist::parse(std::string_view list) {
  HostAllowlist out;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t')) entry.remove_prefix(1);
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\t')) entry.remove_suffix(1);
    if (entry.empty()) {
      continue;
    }
    std::string_view bare = entry;
    if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
      bare = bare.substr(1, bare.size() - 2);
    }
    if (bare.find(':') != std::string_view::npos || is_dotted_quad(bare)) {
      std::string ip = canonical_ip(bare);
      if (ip.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "allowed host '" + std::string(entry) + "' is not an IP address");
      }
      out.entries_.push_back(std::move(ip));
    } else if (is_host_name(bare.front() == '.' ? bare.substr(1) : bare)) {
      out.entries_.push_back(ascii_lower(bare));
    } else {
      return make_error(ErrorCode::kInvalidArgument, "allowed host '" + std::string(entry) + "' is not a host name");
    }
  }
  return out;
}

bool HostAllowlist::allows(const Url& url) const {
  for (const auto& entry : entries_) {
    if (url.host == entry) {
      return true;
    }
    bool domain = !url.host_is_ip && entry.front() == '.' && url.host.size() > entry.size() &&
                  url.host.compare(url.host.size() - entry.size(), entry.size(), entry) == 0;
    if (domain) {
      return true;
    }
  }
  return false;
}

Result<Url> check_destination(std::string_view text, const DestinationRules& rules) {
  auto url = Url::parse(text);
  if (!url) {
    return url;
  }
  if (!url->tls && !rules.allow_private) {
    return make_error(ErrorCode::kForbidden, "only https URLs are accepted");
  }
  if (!rules.allowed_hosts.allows(*url)) {
    return make_error(ErrorCode::kForbidden, "host " + url->host + " is not an allowed destination");
  }
  if (url->host_is_ip && !rules.allow_private && !is_public_address(url->host)) {
    return make_error(ErrorCode::kForbidden, "host " + url->host + " is not a public address");
  }
  return url;
}

}  // namespace idempay::http
