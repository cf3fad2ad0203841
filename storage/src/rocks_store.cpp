// RocksDB store: one column family per keyspace, etag-prefixed values, and a single
// committer thread that checks compare-and-swap conditions and group-commits every batch
// that is waiting with one synced write.
#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include "conditions.hpp"
#include "idempay/base/descriptors.hpp"
#include "idempay/metrics/metrics.hpp"
#include "commit_thread.hpp"
#include "reader_threads.hpp"
#include "idempay/storage/store.hpp"

namespace idempay::storage {

namespace {

// An empty string_view may have no data at all; RocksDB's Slice compares with memcmp, which
// must not be given a null pointer.
rocksdb::Slice slice_of(std::string_view bytes) { return {bytes.empty() ? "" : bytes.data(), bytes.size()}; }

// Values are stored as 8 bytes of little-endian etag followed by the payload.
using EtagBytes = std::array<char, 8>;
EtagBytes etag_bytes(uint64_t etag) {
  EtagBytes out;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>((etag >> (8 * i)) & 0xff);
  }
  return out;
}

// Adds a put of `payload` under `etag` to `wb`, the two parts given to RocksDB as they are:
// it copies them into the batch once, with no value assembled here first.
void put_versioned(rocksdb::WriteBatch& wb, rocksdb::ColumnFamilyHandle* family, std::string_view key,
                   uint64_t etag, std::string_view payload) {
  EtagBytes prefix = etag_bytes(etag);
  rocksdb::Slice key_part = slice_of(key);
  rocksdb::Slice value_parts[] = {{prefix.data(), prefix.size()}, slice_of(payload)};
  wb.Put(family, rocksdb::SliceParts(&key_part, 1), rocksdb::SliceParts(value_parts, 2)).PermitUncheckedError();
}

// A value shorter than its etag is corruption, never "absent": an etag of 0 would let a
// put-if-absent overwrite it.
Result<Versioned> decode(std::string_view raw) {
  Versioned v;
  if (raw.size() < 8) {
    return make_error(ErrorCode::kInternal, "storage corruption: a stored value is shorter than its etag");
  }
  for (int i = 0; i < 8; ++i) {
    v.etag |= static_cast<uint64_t>(static_cast<unsigned char>(raw[i])) << (8 * i);
  }
  v.value.assign(raw.substr(8));
  return v;
}

Error unavailable(const rocksdb::Status& s) {
  return Error{ErrorCode::kUnavailable, "storage failure: " + s.ToString()};
}

struct RocksCommit {
  Batch batch;
  CommitCallback done;
  bool sync = true;
};

class RocksStore final : public Store {
public:
  RocksStore(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles, const RocksOptions& options)
      : db_(db),
        handles_(std::move(handles)),
        sync_(options.sync_writes),
        read_only_(options.read_only),
        path_(options.path),
        recovery_free_bytes_(options.memtable_bytes),
        readers_(std::max<size_t>(options.reader_threads, 1)),
        committer_("idempay-commit", committer_hooks()) {}

  ~RocksStore() override {
    readers_.stop();
    committer_.close();
    log_resident_metadata();
    for (auto* h : handles_) {
      db_->DestroyColumnFamilyHandle(h);
    }
    // After a failed write the WAL's writer keeps its error, and syncing it again trips an
    // assertion in Debian's RocksDB (an abort at shutdown). Synced commits are on disk
    // already; only riding-along ones wait for this sync.
    if (!read_only_ && healthy_) {
      db_->FlushWAL(true).PermitUncheckedError();
    }
    delete db_;
  }

  // What the table files' indexes and filters hold in memory (outside the block cache): the
  // part of the connector's memory that grows with the store.
  void log_resident_metadata() {
    uint64_t bytes = 0;
    if (db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kEstimateTableReadersMem, &bytes)) {
      spdlog::info("store: table indexes and filters hold {:.1f} MB", static_cast<double>(bytes) / (1 << 20));
    }
    for (auto* h : handles_) {
      uint64_t held = 0;
      if (db_->GetIntProperty(h, rocksdb::DB::Properties::kEstimateTableReadersMem, &held) && held > 0) {
        spdlog::info("store: {}: indexes and filters {:.1f} MB", h->GetName(), static_cast<double>(held) / (1 << 20));
      }
    }
  }

  Result<std::optional<Versioned>> get(Keyspace ks, std::string_view key) override {
    return *read(rocksdb::ReadOptions(), ks, key);
  }

  std::optional<Result<std::optional<Versioned>>> get_if_in_memory(Keyspace ks, std::string_view key) override {
    rocksdb::ReadOptions memory_only;
    memory_only.read_tier = rocksdb::kBlockCacheTier;
    return read(memory_only, ks, key);
  }

  // nullopt only for a memory-only read that needs the disk.
  std::optional<Result<std::optional<Versioned>>> read(const rocksdb::ReadOptions& options, Keyspace ks,
                                                       std::string_view key) {
    using Answer = Result<std::optional<Versioned>>;
    if (auto k = known(ks); !k) {
      return Answer(tl::unexpected(k.error()));
    }
    std::string raw;
    auto s = db_->Get(options, cf(ks), slice_of(key), &raw);
    if (s.IsIncomplete()) {
      return std::nullopt;
    }
    if (s.IsNotFound()) {
      return Answer(std::optional<Versioned>());
    }
    if (!s.ok()) {
      return Answer(tl::unexpected(unavailable(s)));
    }
    auto v = decode(raw);
    if (!v) {
      return Answer(tl::unexpected(v.error()));
    }
    return Answer(std::optional<Versioned>(std::move(*v)));
  }

  void read_async(std::function<void(Store&)> job) override {
    if (!readers_.submit([this, job] { job(*this); })) {
      job(*this);
    }
  }

  void commit(Batch batch, CommitCallback done) override { enqueue(std::move(batch), std::move(done), true); }

  void commit_riding_along(Batch batch, CommitCallback done) override {
    enqueue(std::move(batch), std::move(done), false);
  }

  void enqueue(Batch batch, CommitCallback done, bool sync) {
    if (read_only_) {
      return done(make_error(ErrorCode::kUnavailable, "the store is open read-only"));
    }
    if (auto k = known_keyspaces(batch, handles_.size()); !k) {
      return done(tl::unexpected(k.error()));
    }
    RocksCommit pending{std::move(batch), std::move(done), sync};
    if (!committer_.push(pending)) {
      pending.done(make_error(ErrorCode::kUnavailable, "store is closing"));
    }
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan(Keyspace ks, std::string_view prefix,
                                                                size_t limit) override {
    rocksdb::Slice p(slice_of(prefix));
    return collect(
        ks, [&](rocksdb::Iterator& it) { it.Seek(p); }, [&](const rocksdb::Slice& key) { return key.starts_with(p); },
        limit);
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan_after(Keyspace ks, std::string_view after,
                                                                      size_t limit) override {
    rocksdb::Slice start(slice_of(after));
    auto seek_past = [&](rocksdb::Iterator& it) {
      it.Seek(start);
      if (it.Valid() && it.key() == start) {
        it.Next();
      }
    };
    return collect(ks, seek_past, [](const rocksdb::Slice&) { return true; }, limit);
  }

  Result<std::optional<Entry>> last_in(Keyspace ks, std::string_view from, std::string_view below) override {
    return *seek_last(rocksdb::ReadOptions(), ks, from, below);
  }

  std::optional<Result<std::optional<Entry>>> last_in_if_in_memory(Keyspace ks, std::string_view from,
                                                                  std::string_view below) override {
    rocksdb::ReadOptions memory_only;
    memory_only.read_tier = rocksdb::kBlockCacheTier;
    return seek_last(memory_only, ks, from, below);
  }

private:
  // The last entry in [from, below); nullopt only for a memory-only read that needs the disk.
  // The bounds also keep the iterator from stepping over deleted keys outside them.
  std::optional<Result<std::optional<Entry>>> seek_last(rocksdb::ReadOptions options, Keyspace ks,
                                                        std::string_view from, std::string_view below) {
    using Answer = Result<std::optional<Entry>>;
    if (auto k = known(ks); !k) {
      return Answer(tl::unexpected(k.error()));
    }
    rocksdb::Slice lower(slice_of(from));
    rocksdb::Slice upper(slice_of(below));
    options.iterate_lower_bound = &lower;
    options.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, cf(ks)));
    it->SeekToLast();
    if (it->status().IsIncomplete()) {
      return std::nullopt;
    }
    if (!it->status().ok()) {
      return Answer(tl::unexpected(unavailable(it->status())));
    }
    if (!it->Valid()) {
      return Answer(std::optional<Entry>());
    }
    auto v = decode(std::string_view(it->value().data(), it->value().size()));
    if (!v) {
      return Answer(tl::unexpected(v.error()));
    }
    return Answer(std::optional<Entry>(Entry(it->key().ToString(), std::move(*v))));
  }

  // Up to `limit` entries of `ks` in key order from where `seek` puts an iterator, while
  // `keep(key)`.
  template <class Seek, class Keep>
  Result<std::vector<std::pair<std::string, Versioned>>> collect(Keyspace ks, Seek seek, Keep keep, size_t limit) {
    if (auto k = known(ks); !k) {
      return tl::unexpected(k.error());
    }
    std::vector<std::pair<std::string, Versioned>> out;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(ks)));
    for (seek(*it); it->Valid() && keep(it->key()) && out.size() < limit; it->Next()) {
      auto v = decode(std::string_view(it->value().data(), it->value().size()));
      if (!v) {
        return tl::unexpected(Error{v.error().code, v.error().message + " (key " + it->key().ToString() + ")"});
      }
      out.emplace_back(it->key().ToString(), std::move(*v));
    }
    if (!it->status().ok()) {
      return tl::unexpected(unavailable(it->status()));
    }
    return out;
  }

  rocksdb::ColumnFamilyHandle* cf(Keyspace ks) const { return handles_[ks.index]; }

  Status known(Keyspace ks) const {
    if (ks.index >= handles_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(ks.index));
    }
    return {};
  }

  // Every group in one synced write; while unhealthy, the committer also wakes once a second
  // with nothing queued, to try to resume.
  CommitThread<RocksCommit>::Hooks committer_hooks() {
    CommitThread<RocksCommit>::Hooks hooks;
    hooks.commit = [this](std::vector<RocksCommit>& group) { commit_group(group); };
    hooks.idle_for = [this] { return healthy_ ? std::nullopt : std::optional<std::chrono::milliseconds>(kResumeInterval); };
    hooks.wake = [this] {
      if (!healthy_) {
        try_resume();
      }
    };
    return hooks;
  }

  // -- health: a full or failing disk is an outage, not a crash ------------------------------
  //
  // A failed write puts RocksDB in a background-error state where every write fails at once
  // (callers get kUnavailable: retryable) and reads go on (replays of stored answers). RocksDB
  // recovers from a full disk by itself once enough space is free; Resume() is asked once a
  // second as well, for errors it does not retry alone and to notice the recovery when idle.

  static constexpr auto kResumeInterval = std::chrono::seconds(1);
  static constexpr auto kSpaceNoteInterval = std::chrono::seconds(30);

  void note_write(const rocksdb::Status& s) {
    auto now = std::chrono::steady_clock::now();
    if (!s.ok() && healthy_) {
      healthy_ = false;
      unhealthy_since_ = last_resume_ = last_space_note_ = now;
      out_of_space_ = s.IsNoSpace();
      spdlog::error("storage unhealthy: a write failed ({}); every write is refused (503) until it recovers, "
                    "stored answers are still served{}", s.ToString(), out_of_space_ ? space_needed() : "");
    } else if (s.ok() && !healthy_) {
      mark_healthy(now);
    }
  }

  // RocksDB resumes after a full disk only once the file system has as much free space as the
  // largest memtable (its "reserved disk buffer", so that the first flush has room): the
  // operator must know the figure to free enough.
  std::string space_needed() const {
    std::error_code ec;
    auto space = std::filesystem::space(path_, ec);
    constexpr uintmax_t kMiB = 1 << 20;
    std::string free = ec ? std::string("unknown") : std::to_string(space.available / kMiB) + " MB";
    return "; the disk is full: writes resume by themselves once " + std::to_string(recovery_free_bytes_ / kMiB) +
           " MB are free on the file system of " + path_ + " (the memtable size), " + free + " free now";
  }

  void try_resume() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_resume_ < kResumeInterval) {
      return;
    }
    last_resume_ = now;
    if (out_of_space_ && now - last_space_note_ >= kSpaceNoteInterval) {
      last_space_note_ = now;
      spdlog::error("storage still unhealthy{}", space_needed());
    }
    if (db_->Resume().ok()) {
      mark_healthy(now);
    }
  }

  void mark_healthy(std::chrono::steady_clock::time_point now) {
    healthy_ = true;
    spdlog::info("storage healthy again: writes resumed after {} s",
                 std::chrono::duration_cast<std::chrono::seconds>(now - unhealthy_since_).count());
  }

  // Stages each batch whose conditions hold (against the store plus the batches staged
  // before it in this group), writes all staged batches with one synced write, then
  // completes every caller.
  void commit_group(std::vector<RocksCommit>& group) {
    rocksdb::WriteBatch wb;
    StagedEtags staged;
    std::vector<CommitResult> results;
    results.reserve(group.size());
    bool any_synced = false;
    for (auto& pending : group) {
      results.push_back(stage(pending.batch, wb, staged));
      any_synced |= pending.sync;
    }
    if (wb.Count() > 0) {
      rocksdb::WriteOptions wo;
      wo.sync = sync_ && any_synced;  // a group of riding-along commits waits for the next sync
      auto started = std::chrono::steady_clock::now();
      auto s = db_->Write(wo, &wb);
      note_write(s);
      metrics::observe_commit_group(group.size(), metrics::seconds_since(started), s.ok());
      metrics::store_writable(s.ok());
      if (!s.ok()) {
        for (auto& r : results) {
          if (r) {
            r = tl::unexpected(unavailable(s));
          }
        }
      }
    }
    for (size_t i = 0; i < group.size(); ++i) {
      group[i].done(std::move(results[i]));
    }
  }

  // Checks `batch` against the store and the batches staged before it in this group, and
  // adds its writes to `wb` if it passes.
  CommitResult stage(const Batch& batch, rocksdb::WriteBatch& wb, StagedEtags& staged) {
    auto etags = check_conditions(batch, staged, [this](const Write& w) -> Result<uint64_t> {
      auto got = get(w.keyspace, w.key);
      if (!got) {
        return tl::unexpected(got.error());
      }
      return *got ? (*got)->etag : 0;
    });
    if (!etags) {
      return etags;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const Write& w = batch[i];
      if (w.value) {
        put_versioned(wb, cf(w.keyspace), w.key, (*etags)[i], *w.value);
      } else {
        wb.Delete(cf(w.keyspace), w.key).PermitUncheckedError();
      }
    }
    return etags;
  }

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  bool sync_;
  bool read_only_;
  std::string path_;
  size_t recovery_free_bytes_;  // RocksDB's reserve to clear a full disk: the memtable size
  // Touched by the committer thread only (and by the destructor after joining it).
  bool healthy_ = true;
  std::chrono::steady_clock::time_point unhealthy_since_;
  std::chrono::steady_clock::time_point last_resume_;
  bool out_of_space_ = false;
  std::chrono::steady_clock::time_point last_space_note_;
  ReaderThreads readers_;
  CommitThread<RocksCommit> committer_;  // starts after everything it uses exists
};

// RocksDB's own messages go to the service's log, never to a LOG file in the data directory:
// on a full disk that file's writer keeps its first error, and Debian's RocksDB asserts on the
// next line written to it (an abort inside Write(), seen on an 8 MB tmpfs). Warnings and errors
// keep their level; the rest (flush and compaction chatter) is debug.
class ServiceLogger final : public rocksdb::Logger {
public:
  ServiceLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {}

  void Logv(const char* format, va_list ap) override { Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap); }

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    auto to = level == rocksdb::InfoLogLevel::WARN_LEVEL    ? spdlog::level::warn
              : level == rocksdb::InfoLogLevel::ERROR_LEVEL ? spdlog::level::err
              : level == rocksdb::InfoLogLevel::FATAL_LEVEL ? spdlog::level::critical
                                                            : spdlog::level::debug;
    if (!spdlog::should_log(to)) {
      return;
    }
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    spdlog::log(to, "rocksdb: {}", line);
  }
};

// Memory: one block cache for data blocks and one budget for all memtables together, both
// bounded; the table files' indexes and Bloom filters are held outside the cache, by the
// open table readers, and grow with the store (docs/operations.md gives the figure per
// million payments; the connector logs it at shutdown).
constexpr size_t kBlockCacheBytes = 64u << 20;
constexpr size_t kMemtableBudgetBytes = 64u << 20;

// Obsolete WAL and table files are deleted at most this fast, a chunk at a time (a large file
// is truncated chunk by chunk). On a file system mounted with online discard (seen here: ext4
// with `discard` on a virtio disk) freeing a file's blocks holds the WAL's fdatasync behind it:
// the ~240 MB of WAL files released together when max_total_wal_size forces the small
// keyspaces to flush made ~16 back-to-back commit groups of 9-19 ms, a second with a p99 of
// 35-45 ms every 13-17 s under sustained creates. The rate is about ten times what the
// connector writes at its peak (in a sixty-second run of creates the trash was gone within a
// few seconds each time); a trash larger than twice the live tables (a store's first minutes)
// is deleted at once.
constexpr int64_t kDeleteBytesPerSecond = 256 << 20;
constexpr uint64_t kDeleteChunkBytes = 2 << 20;
constexpr double kMaxTrashToTablesRatio = 2.0;

rocksdb::ColumnFamilyOptions family_options(const std::shared_ptr<rocksdb::Cache>& cache, bool read_only_existing_keys,
                                            size_t memtable_bytes) {
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // Put-if-absent on a new paymentId looks up a key that does not exist: without a filter
  // that reads an index block in every level, and costs more as the store grows.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  // Filters and indexes stay resident in their table readers (every file stays open), so that
  // a lookup of a new paymentId costs filter probes in memory whatever the store's size. Held
  // in the block cache instead, they were evicted by the data blocks a busy store churns
  // through, and every new payment read and decompressed them again: under sustained creates
  // that was half the CPU of the thread that runs the payment actors (the sustained-load issue).
  table.cache_index_and_filter_blocks = false;
  // 16 KB data blocks: the resident index has a quarter of the entries it had with 4 KB (it
  // was about 70% of the resident bytes); a record read from the disk decompresses 16 KB,
  // on a reader thread.
  table.block_size = 16u << 10;
  table.format_version = 5;
  rocksdb::ColumnFamilyOptions family;
  family.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // The last level holds nine tenths of the keys; a read that finds its key needs no filter
  // there, since no level below it could hold the key instead.
  family.optimize_filters_for_hits = read_only_existing_keys;
  // Also the free space RocksDB waits for before it resumes after a full disk (RocksOptions).
  family.write_buffer_size = memtable_bytes;
  // LZ4 at every level: ZSTD on the last level made compaction cost a third of the write
  // throughput on two cores.
  family.compression = rocksdb::kLZ4Compression;
  family.level_compaction_dynamic_level_bytes = true;
  // A filter for the memtables too, which hold the newest keys.
  family.memtable_prefix_bloom_size_ratio = 0.02;
  family.memtable_whole_key_filtering = true;
  return family;
}

}  // namespace

Result<std::unique_ptr<Store>> open_rocks_store(const RocksOptions& options, const KeyspaceNames& keyspaces) {
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  // Table files kept open at most: an eighth of the descriptor limit (base/descriptors.hpp),
  // so that the store always has descriptors for its next write-ahead log and new tables.
  db_options.max_open_files = static_cast<int>(descriptor_share(8, 16, 10'000));
  db_options.db_write_buffer_size = kMemtableBudgetBytes;
  db_options.max_total_wal_size = 4 * kMemtableBudgetBytes;
  // Flushes and compactions write their files with a sync every megabyte instead of one at the
  // end: a final fsync of a whole 16 MB table queued the WAL's fdatasync behind it (commits
  // of 20-40 ms, the p99 of creates tripled as the store grew).
  db_options.bytes_per_sync = 1 << 20;
  db_options.info_log = std::make_shared<ServiceLogger>();
  rocksdb::Status deleter;
  db_options.sst_file_manager.reset(rocksdb::NewSstFileManager(
      rocksdb::Env::Default(), db_options.info_log, /*trash_dir=*/"", kDeleteBytesPerSecond,
      /*delete_existing_trash=*/true, &deleter, kMaxTrashToTablesRatio, kDeleteChunkBytes));
  if (!deleter.ok()) {
    return tl::unexpected(unavailable(deleter));
  }
  auto cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  const auto& hits_only = options.read_only_existing_keys;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  families.emplace_back(rocksdb::kDefaultColumnFamilyName, family_options(cache, false, options.memtable_bytes));
  for (const auto& name : keyspaces) {
    bool existing_only = std::find(hits_only.begin(), hits_only.end(), name) != hits_only.end();
    families.emplace_back(name, family_options(cache, existing_only, options.memtable_bytes));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  auto s = options.read_only ? rocksdb::DB::OpenForReadOnly(db_options, options.path, families, &handles, &db)
                             : rocksdb::DB::Open(db_options, options.path, families, &handles, &db);
  if (!s.ok()) {
    return tl::unexpected(unavailable(s));
  }
  // handles[0] is the default family, which idempay does not use.
  db->DestroyColumnFamilyHandle(handles[0]);
  handles.erase(handles.begin());
  return std::unique_ptr<Store>(new RocksStore(db, std::move(handles), options));
}

}  // namespace idempay::storage
