#include "idempay/base/timestamps.hpp"

#include <cstdio>
#include <ctime>

namespace idempay {

std::string format_rfc3339(int64_t unix_ms) {
  // Floored, so that an instant before 1970 keeps a millisecond field of 0-999 (C++'s division
  // truncates toward zero: -1 ms would otherwise print as "1970-01-01T00:00:00.-01Z").
  int64_t millis = ((unix_ms % 1000) + 1000) % 1000;
  std::time_t seconds = static_cast<std::time_t>((unix_ms - millis) / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char out[64];  // room for any int the fields may hold (GCC's -Wformat-truncation counts them so)
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  return out;
}

namespace {

// Reads exactly `width` digits at `pos` (advancing it); -1 if they are not there.
int digits(std::string_view text, size_t& pos, size_t width) {
  if (pos + width > text.size()) {
    return -1;
  }
  int value = 0;
  for (size_t i = 0; i < width; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  pos += width;
  return value;
}

bool expect(std::string_view text, size_t& pos, std::string_view one_of) {
  if (pos < text.size() && one_of.find(text[pos]) != std::string_view::npos) {
    ++pos;
    return true;
  }
  return false;
}

}  // namespace

Result<int64_t> parse_rfc3339(std::string_view text) {
  auto bad = [&] { return make_error(ErrorCode::kInvalidArgument, "not an RFC 3339 date-time: " + std::string(text.substr(0, 40))); };
  size_t pos = 0;
  int year = digits(text, pos, 4);
  bool date = year >= 0 && expect(text, pos, "-");
  int month = date ? digits(text, pos, 2) : -1;
  date = month >= 1 && month <= 12 && expect(text, pos, "-");
  int day = date ? digits(text, pos, 2) : -1;
  date = day >= 1 && day <= 31 && expect(text, pos, "Tt ");
  int hour = date ? digits(text, pos, 2) : -1;
  bool time = hour >= 0 && hour <= 23 && expect(text, pos, ":");
  int minute = time ? digits(text, pos, 2) : -1;
  time = minute >= 0 && minute <= 59 && expect(text, pos, ":");
  int second = time ? digits(text, pos, 2) : -1;
  if (second < 0 || second > 60) {
    return bad();
  }
  int64_t millis = 0;
  if (expect(text, pos, ".")) {
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - start < 3) {
        millis = millis * 10 + (text[pos] - '0');
      }
      ++pos;
    }
    if (pos == start) {
      return bad();
    }
    for (size_t n = pos - start; n < 3; ++n) {
      millis *= 10;
    }
  }
  int64_t offset_minutes = 0;
  if (!expect(text, pos, "Zz")) {
    bool ahead = pos < text.size() && text[pos] == '+';
    if (!expect(text, pos, "+-")) {
      return bad();
    }
    int oh = digits(text, pos, 2);
    bool colon = oh >= 0 && expect(text, pos, ":");
    int om = colon ? digits(text, pos, 2) : -1;
    if (om < 0 || oh > 23 || om > 59) {
      return bad();
    }
    offset_minutes = (ahead ? 1 : -1) * (oh * 60 + om);
  }
  if (pos != text.size()) {
    return bad();
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_minutes * 60;
  return seconds * 1000 + millis;
}

}  // namespace idempay
