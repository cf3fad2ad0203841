#pragma once

#include <string>
#include <string_view>

namespace idempay {

/// Card data as the gateway sent it. Lives only in memory for the duration of the
/// acquirer call: never stored, never logged (G6).
struct CardSecret {
  std::string number;
  std::string holder;
  std::string csc;
  std::string expiration_month;
  std::string expiration_year;
  // Secure Proxy placeholders (not secrets themselves, but never stored either).
  std::string number_token;
  std::string holder_token;
  std::string csc_token;
};

/// What may be kept about a card: BIN (first 6), last 4, number length, expiry.
struct CardSummary {
  std::string bin;
  std::string last4;
  int number_length = 0;
  std::string expiration_month;
  std::string expiration_year;
};

/// Derives the storable summary. `proxy_bin`/`proxy_length` are the Secure Proxy fields
/// used when the raw number is absent.
CardSummary summarize_card(const CardSecret& card, std::string_view proxy_bin, int proxy_length);

/// True for 12–19 digits passing the Luhn check.
bool is_valid_pan(std::string_view number);

/// Replaces every run of 12–19 digits (spaces or dashes allowed between them) with
/// `[redacted]`, so that text built from caller input is safe to log.
std::string redact_digit_runs(std::string_view text);

}  // namespace idempay
