#include "idempay/tracing/context.hpp"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace idempay::tracing {

namespace {

template <size_t N>
bool all_zero(const std::array<uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

int lower_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is malformed too: the specification writes lower case only
}

// `text` (2 * N lower-case hex digits) into `out`.
template <size_t N>
bool read_hex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) {
    return false;
  }
  for (size_t i = 0; i < N; ++i) {
    int hi = lower_hex_digit(text[2 * i]);
    int lo = lower_hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::mt19937_64& generator() {
  // Trace ids need to be unique and unguessable enough to be unrelated, not secret: a
  // per-thread generator seeded from the system's entropy does that without a lock or a syscall.
  thread_local std::mt19937_64 g{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
  return g;
}

template <size_t N>
std::array<uint8_t, N> random_id() {
  std::array<uint8_t, N> id{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      uint64_t r = generator()();
      for (size_t j = 0; j < 8 && i + j < N; ++j) {
        id[i + j] = static_cast<uint8_t>(r >> (8 * j));
      }
    }
  } while (all_zero(id));
  return id;
}

bool is_lcalpha(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_key_char(char c) { return is_lcalpha(c) || is_digit(c) || c == '_' || c == '-' || c == '*' || c == '/'; }

// tracestate's key: a simple key, or tenant@system (W3C Trace Context, section 3.3.1.3.1).
bool valid_key(std::string_view key) {
  auto at = key.find('@');
  auto all_key_chars = [](std::string_view s) { return std::all_of(s.begin(), s.end(), is_key_char); };
  if (at == std::string_view::npos) {
    return !key.empty() && key.size() <= 256 && is_lcalpha(key[0]) && all_key_chars(key);
  }
  auto tenant = key.substr(0, at);
  auto system = key.substr(at + 1);
  return !tenant.empty() && tenant.size() <= 241 && (is_lcalpha(tenant[0]) || is_digit(tenant[0])) &&
         all_key_chars(tenant) && !system.empty() && system.size() <= 14 && is_lcalpha(system[0]) &&
         all_key_chars(system);
}

// Printable ASCII but ',' and '=', spaces allowed inside only.
bool valid_value(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

thread_local TraceContext current_context;

}  // namespace

bool TraceContext::valid() const { return !all_zero(trace_id) && !all_zero(span_id); }

std::string to_hex(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

std::string TraceContext::trace_id_hex() const { return to_hex(trace_id.data(), trace_id.size()); }
std::string TraceContext::span_id_hex() const { return to_hex(span_id.data(), span_id.size()); }

std::string TraceContext::traceparent() const {
  if (!valid()) {
    return {};
  }
  return "00-" + trace_id_hex() + "-" + span_id_hex() + (sampled ? "-01" : "-00");
}

std::optional<TraceContext> parse_traceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 characters.
  constexpr size_t kLength = 55;
  if (header.size() < kLength || header[2] != '-' || header[35] != '-' || header[52] != '-') {
    return std::nullopt;
  }
  std::array<uint8_t, 1> version{};
  std::array<uint8_t, 1> flags{};
  TraceContext c;
  if (!read_hex(header.substr(0, 2), version) || version[0] == 0xff || !read_hex(header.substr(3, 32), c.trace_id) ||
      !read_hex(header.substr(36, 16), c.span_id) || !read_hex(header.substr(53, 2), flags) || !c.valid()) {
    return std::nullopt;
  }
  // Version 00 ends at the flags; a later version may add fields after a dash.
  if (header.size() > kLength && (version[0] == 0 || header[kLength] != '-')) {
    return std::nullopt;
  }
  c.sampled = (flags[0] & 0x01) != 0;
  return c;
}

std::string valid_tracestate(std::string_view header) {
  if (header.size() > 512) {
    return {};
  }
  std::vector<std::string_view> keys;
  std::string out;
  while (!header.empty()) {
    auto comma = header.find(',');
    auto member = trim_ows(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (member.empty()) {
      continue;  // empty list members are allowed and dropped
    }
    auto eq = member.find('=');
    if (eq == std::string_view::npos) {
      return {};
    }
    auto key = member.substr(0, eq);
    if (!valid_key(key) || !valid_value(member.substr(eq + 1)) ||
        std::find(keys.begin(), keys.end(), key) != keys.end() || keys.size() == 32) {
      return {};
    }
    keys.push_back(key);
    if (!out.empty()) {
      out += ',';
    }
    out.append(member);
  }
  return out;
}

TraceId new_trace_id() { return random_id<16>(); }
SpanId new_span_id() { return random_id<8>(); }

const TraceContext& current() { return current_context; }

Scope::Scope(TraceContext context) : previous_(std::exchange(current_context, std::move(context))) {}
Scope::~Scope() { current_context = std::move(previous_); }

}  // namespace idempay::tracing
