#include "idempay/domain/stored_form.hpp"

#include <charconv>
#include <string>

#include "idempay/base/fault.hpp"
#include "idempay/domain/audit.hpp"
#include "idempay/domain/keyspaces.hpp"

namespace idempay::domain {

namespace {

constexpr std::string_view kHeadSuffix = "/~head";
// Keys read, and removed, per batch: a migration's memory and each commit stay small.
constexpr size_t kPage = 512;

Result<std::optional<storage::Versioned>> read_format(storage::Store& store) {
  return store.get(Space::kMeta, kFormatKey);
}

Result<int64_t> format_of(const std::optional<storage::Versioned>& stored) {
  if (!stored) {
    return 1;
  }
  int64_t format = 0;
  const auto& text = stored->value;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), format);
  if (ec != std::errc() || end != text.data() + text.size() || format < 1) {
    return make_error(ErrorCode::kInternal, "the store's format is unreadable: " + text);
  }
  return format;
}

bool is_legacy_head(const std::string& key) {
  return key.size() > kHeadSuffix.size() &&
         key.compare(key.size() - kHeadSuffix.size(), kHeadSuffix.size(), kHeadSuffix) == 0;
}

// Format 1 -> 2: the chains' head copies removed, page by page. Each page commits on its own;
// a run killed between pages leaves the rest for the next one (format 2 ignores them).
Result<size_t> remove_head_copies(storage::Store& store) {
  size_t removed = 0;
  std::string after;
  for (;;) {
    auto page = store.scan_after(Space::kAudit, after, kPage);
    if (!page) {
      return tl::unexpected(page.error());
    }
    if (page->empty()) {
      return removed;
    }
    storage::Batch batch;
    for (const auto& [key, unused] : *page) {
      if (is_legacy_head(key)) {
        batch.push_back({Space::kAudit, key, std::nullopt, std::nullopt, true});
      }
    }
    after = page->back().first;
    if (!batch.empty()) {
      removed += batch.size();
      if (auto done = store.commit_and_wait(std::move(batch)); !done) {
        return tl::unexpected(done.error());
      }
      fault::crash_point("during-migration");
    }
  }
}

}  // namespace

Result<int64_t> stored_format(storage::Store& store) {
  auto stored = read_format(store);
  if (!stored) {
    return tl::unexpected(stored.error());
  }
  return format_of(*stored);
}

Result<Migration> migrate_stored_form(storage::Store& store) {
  auto stored = read_format(store);
  if (!stored) {
    return tl::unexpected(stored.error());
  }
  auto format = format_of(*stored);
  if (!format) {
    return tl::unexpected(format.error());
  }
  Migration m{*format, 0};
  if (*format > kStoredFormat) {
    return make_error(ErrorCode::kIllegalState, "the store holds format " + std::to_string(*format) +
                                                    ", written by a newer release; this one reads up to " +
                                                    std::to_string(kStoredFormat));
  }
  if (*format == kStoredFormat) {
    return m;
  }
  auto any_payment = store.scan(Space::kPayments, "", 1);
  if (!any_payment) {
    return tl::unexpected(any_payment.error());
  }
  if (!*stored && any_payment->empty()) {
    m.from = 0;  // a new store: nothing of an older form to remove
  }
  auto removed = remove_head_copies(store);
  if (!removed) {
    return tl::unexpected(removed.error());
  }
  m.removed = *removed;
  // Recorded last, conditioned on what was read: two migrations at once record it once.
  uint64_t expected = *stored ? (*stored)->etag : 0;
  auto recorded = store.commit_and_wait({{Space::kMeta, std::string(kFormatKey), std::to_string(kStoredFormat), expected}});
  if (!recorded && recorded.error().code != ErrorCode::kConflict) {
    return tl::unexpected(recorded.error());
  }
  return m;
}

Status require_current_format(storage::Store& store) {
  auto format = stored_format(store);
  if (!format) {
    return tl::unexpected(format.error());
  }
  if (*format != kStoredFormat) {
    return make_error(ErrorCode::kIllegalState, "the store holds format " + std::to_string(*format) + "; this release " +
                                                    (*format < kStoredFormat ? "needs " : "reads up to ") +
                                                    std::to_string(kStoredFormat) +
                                                    (*format < kStoredFormat ? ": run idempay migrate" : ""));
  }
  return {};
}

}  // namespace idempay::domain
