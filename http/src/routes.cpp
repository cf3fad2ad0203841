#include "idempay/http/routes.hpp"

#include <algorithm>

namespace idempay::http {

namespace {

constexpr std::string_view kParam = "{}";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits "/a/b/c" into its segments, as written; one trailing slash is dropped and an empty
// segment ("a//b") is kept, to match nothing.
std::vector<std::string_view> raw_segments(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);  // "/payments/P/refunds/" is "/payments/P/refunds"
  }
  if (path.empty()) {
    return out;
  }
  for (size_t start = 0;;) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) {
      return out;
    }
    start = slash + 1;
  }
}

}  // namespace

std::optional<std::string> decode_segment(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    char c = segment[i];
    if (c == '%') {
      int hi = i + 2 < segment.size() ? hex_value(segment[i + 1]) : -1;
      int lo = i + 2 < segment.size() ? hex_value(segment[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return std::nullopt;
      }
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '/') {
      return std::nullopt;
    }
    out.push_back(c);
  }
  return out;
}

std::string RouteMatch::canonical() const {
  std::string out;
  size_t next = 0;
  for (auto seg : raw_segments(pattern)) {
    out.push_back('/');
    out += seg == kParam && next < params.size() ? std::string_view(params[next++]) : seg;
  }
  return out.empty() ? "/" : out;
}

namespace {

// The segments of `path` decoded, or nullopt if one cannot be (or it is not a path).
std::optional<std::vector<std::string>> decoded_segments(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (auto raw : raw_segments(path)) {
    auto decoded = decode_segment(raw);
    if (!decoded) {
      return std::nullopt;
    }
    out.push_back(std::move(*decoded));
  }
  return out;
}

}  // namespace

RouteTable::RouteTable(std::vector<Route> routes) {
  for (const Route& route : routes) {
    std::string_view method = text_.emplace_back(route.method);
    std::string_view pattern = text_.emplace_back(route.pattern);
    routes_.push_back(Entry{method, pattern, route.id, raw_segments(pattern)});
  }
}

bool RouteTable::matches(const Entry& entry, const std::vector<std::string>& segments) const {
  if (entry.segments.size() != segments.size()) {
    return false;
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    bool ok = entry.segments[i] == kParam ? !segments[i].empty() : entry.segments[i] == segments[i];
    if (!ok) {
      return false;
    }
  }
  return true;
}

RouteLookup RouteTable::find(std::string_view method, std::string_view path) const {
  RouteLookup out;
  auto segments = decoded_segments(path);
  if (!segments) {
    return out;
  }
  for (const Entry& entry : routes_) {
    if (!matches(entry, *segments)) {
      continue;
    }
    if (entry.method == method) {
      RouteMatch match;
      match.id = entry.id;
      match.pattern = entry.pattern;
      for (size_t s = 0; s < entry.segments.size(); ++s) {
        if (entry.segments[s] == kParam) {
          match.params.push_back(std::move((*segments)[s]));
        }
      }
      out.match = std::move(match);
      out.allow.clear();
      return out;
    }
    if (out.allow.find(entry.method) == std::string::npos) {
      out.allow += (out.allow.empty() ? "" : ", ") + std::string(entry.method);
      if (entry.method == "GET") {
        out.allow += ", HEAD";  // the server answers HEAD wherever GET is (server.hpp)
      }
    }
  }
  return out;
}

bool RouteTable::knows(std::string_view path) const {
  auto segments = decoded_segments(path);
  return segments && std::any_of(routes_.begin(), routes_.end(),
                                 [&](const Entry& entry) { return matches(entry, *segments); });
}

}  // namespace idempay::http
