#pragma once
// A fixed table of routes: a method and a path template of literal segments and "{}"
// parameters. Matching splits the path at '/', percent-decodes each segment once (so that a
// paymentId "a:b" sent as "a%3Ab" is the same id) and compares segment by segment; one
// trailing slash is ignored. What a route does is its owner's business: a match is the route's
// id and its parameters, decoded.
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idempay::http {

/// A route as its owner declares it (a pattern may be made at run time: an acquirer kind's
/// webhook path).
struct Route {
  std::string method;   ///< "GET", "POST", ...
  std::string pattern;  ///< "/payments/{}/settlements"
  int id = 0;           ///< the owner's name for it (an enum)
};

struct RouteMatch {
  int id = 0;                       ///< Route::id
  std::vector<std::string> params;  ///< the "{}" segments, percent-decoded
  /// The route's canonical path: the pattern with its parameters, as decoded. Two requests
  /// that reach the same route for the same ids have the same canonical path, whatever their
  /// spelling (escapes, a trailing slash).
  std::string canonical() const;
  std::string_view pattern;
};

/// What a path and method came to: a route, a known path with another method (405, `allow`
/// lists the methods it has), or nothing (404).
struct RouteLookup {
  std::optional<RouteMatch> match;
  std::string allow;  ///< "GET, POST" when the path is known but not for this method
};

/// One path segment percent-decoded; nullopt for a malformed escape or one that decodes to a
/// control character or '/' (neither belongs in an id).
std::optional<std::string> decode_segment(std::string_view segment);

class RouteTable {
public:
  explicit RouteTable(std::vector<Route> routes);
  // Its entries point into its own text: moved (the deque's elements stay put), never copied.
  RouteTable(RouteTable&&) = default;
  RouteTable& operator=(RouteTable&&) = default;
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  RouteLookup find(std::string_view method, std::string_view path) const;
  /// True when some route has this path, whatever its method: a request for anything else is
  /// a 404 before its credentials are even looked at.
  bool knows(std::string_view path) const;

private:
  struct Entry {
    std::string_view method;
    std::string_view pattern;
    int id = 0;
    std::vector<std::string_view> segments;  // of the pattern, split once
  };
  bool matches(const Entry& entry, const std::vector<std::string>& segments) const;

  std::deque<std::string> text_;  // the routes' methods and patterns: what every view above points into
  std::vector<Entry> routes_;
};

}  // namespace idempay::http
