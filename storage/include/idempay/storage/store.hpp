#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idempay/base/error.hpp"

namespace idempay::storage {

/// A keyspace (a RocksDB column family; a table in a SQL store): the position of its name in
/// the list its caller declared when it opened the store. The store knows no keyspace of its
/// own; an index outside that list is refused with kInvalidArgument.
struct Keyspace {
  uint8_t index = 0;
  friend constexpr bool operator==(Keyspace a, Keyspace b) { return a.index == b.index; }
  friend constexpr bool operator!=(Keyspace a, Keyspace b) { return a.index != b.index; }
};

/// The keyspaces a store is opened with; a Keyspace counts in this order.
using KeyspaceNames = std::vector<std::string>;

/// A stored value and its etag: the record's version, 1 for the first write and +1 for
/// every later one. Etag 0 means "absent".
struct Versioned {
  std::string value;
  uint64_t etag = 0;
};

/// A stored key and its value.
using Entry = std::pair<std::string, Versioned>;

/// One write of an atomic batch. `expected_etag` is the compare-and-swap condition:
/// nullopt writes unconditionally, 0 requires the key to be absent (put-if-absent),
/// n requires the current etag to be n. `value` nullopt deletes the key.
struct Write {
  Keyspace keyspace;
  std::string key;
  std::optional<std::string> value;
  std::optional<uint64_t> expected_etag;
  /// For keys nobody compare-and-swaps (audit entries, index entries): an unconditional
  /// write that does not read the current version first (one lookup fewer on the commit
  /// path); the key's etag starts again at 1. Ignored when `expected_etag` is set.
  bool blind = false;
};
using Batch = std::vector<Write>;

/// New etags of a committed batch, one per write, in order (0 for deletes).
using CommitResult = Result<std::vector<uint64_t>>;
using CommitCallback = std::function<void(CommitResult)>;

/// The durable key-value store with etag compare-and-swap.
///
/// Thread-safe. `get` and `scan` are synchronous: a lookup whose block is not cached waits for
/// the disk, so threads that must never wait (the actors' workers, the I/O threads) read with
/// `get_if_in_memory` and, when that needs the disk, through `read_async`; tools and start-up
/// code read directly. Commits are asynchronous: `commit` never blocks on disk; the callback runs on a store thread once
/// the batch is durable (synced WAL) or has failed. A batch is all-or-nothing: if any
/// condition fails, nothing is written and the callback gets kConflict. A storage failure
/// yields kUnavailable. Concurrent commits are grouped and share one sync.
class Store {
public:
  virtual ~Store() = default;

  /// The value and etag of `key`, nullopt if absent, kUnavailable on a read failure.
  virtual Result<std::optional<Versioned>> get(Keyspace ks, std::string_view key) = 0;

  /// Commits `batch` atomically; see the class comment.
  virtual void commit(Batch batch, CommitCallback done) = 0;

  /// Commits `batch` atomically without its own sync: it is written in order with the other
  /// commits and becomes durable with the next synced one (a crash before that may lose it, and
  /// nothing after it). For records no answer depends on, such as a duplicate's audit entry.
  /// The default implementation is a normal commit.
  virtual void commit_riding_along(Batch batch, CommitCallback done) { commit(std::move(batch), std::move(done)); }

  /// `get` from memory only (memtables, cached blocks, and the resident Bloom filters, which
  /// answer most lookups of a key that does not exist): never waits for the disk. nullopt when
  /// the answer needs the disk; the caller then reads through `read_async`.
  virtual std::optional<Result<std::optional<Versioned>>> get_if_in_memory(Keyspace ks, std::string_view key) = 0;

  /// Runs `job` on one of the store's reader threads and returns at once; the job reads with
  /// `get`/`scan` there and hands its result back (to an actor, as a message). Jobs run in no
  /// particular order with each other; a job sees every commit completed before it was
  /// submitted. While the store closes, jobs still queued run before it closes. A job runs in
  /// the caller's trace (tracing::current() when submitted).
  virtual void read_async(std::function<void(Store&)> job) = 0;

  /// Up to `limit` entries whose key starts with `prefix`, in key order.
  virtual Result<std::vector<std::pair<std::string, Versioned>>> scan(Keyspace ks,
                                                                        std::string_view prefix,
                                                                        size_t limit) = 0;

  /// Up to `limit` entries whose key is greater than `after`, in key order: a whole keyspace
  /// page by page (start with `after` empty; every key the connector writes is non-empty).
  virtual Result<std::vector<std::pair<std::string, Versioned>>> scan_after(Keyspace ks, std::string_view after,
                                                                              size_t limit) = 0;

  /// The entry with the greatest key in [`from`, `below`), nullopt if there is none: the newest
  /// of a series of keys that sort in the order they were written (an audit trail's batches).
  virtual Result<std::optional<Entry>> last_in(Keyspace ks, std::string_view from, std::string_view below) = 0;

  /// `last_in` from memory only, like `get_if_in_memory`: nullopt when the answer needs the disk.
  virtual std::optional<Result<std::optional<Entry>>> last_in_if_in_memory(Keyspace ks, std::string_view from,
                                                                          std::string_view below) = 0;

  /// Blocking commit for tools and tests; never call it from an actor or an I/O thread.
  CommitResult commit_and_wait(Batch batch);
};

/// In-memory store for tests: same contract, no durability.
std::unique_ptr<Store> make_memory_store(KeyspaceNames keyspaces);

struct RocksOptions {
  std::string path;         ///< directory; created if missing
  bool sync_writes = true;  ///< fsync the WAL before completing a commit. Default: true
  /// Open without the directory lock, for reading a (possibly running) connector's data as
  /// of the moment of opening; every commit fails with kUnavailable. Default: false
  bool read_only = false;
  /// Threads that run `read_async` jobs. Default: 2
  size_t reader_threads = 2;
  /// Each keyspace's memtable (RocksDB's write_buffer_size). RocksDB also waits for this much
  /// free space on the file system before it resumes writing after a full disk. Smaller
  /// recovers with less room freed, and flushes smaller files more often. Default: 16 MiB
  size_t memtable_bytes = 16u << 20;
  /// Keyspaces whose point reads only look up keys that exist (never a key about to be
  /// created): their last level keeps no filter, which is where most of a filter's memory is.
  KeyspaceNames read_only_existing_keys{};
};

/// Opens (or creates) the RocksDB store with `keyspaces` (one column family each, created if
/// missing; a store written with more keyspaces than these does not open); kUnavailable if the
/// directory cannot be opened (for example because another process holds it).
Result<std::unique_ptr<Store>> open_rocks_store(const RocksOptions& options, const KeyspaceNames& keyspaces);

/// A store in PostgreSQL: one table per keyspace in `schema`, etags in a version column, group
/// commit as one transaction with synchronous commit.
struct PostgresOptions {
  /// A libpq connection URI (postgresql://...) or key=value string; empty: the libpq
  /// environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, ...).
  std::string uri;
  /// The schema holding the keyspace tables and the schema version. Default: idempay
  std::string schema = "idempay";
  /// Connections (and threads) for reads. Default: 2
  size_t reader_connections = 2;
  /// For tools: no lock, no migration, every commit fails with kUnavailable. Default: false
  bool read_only = false;
  /// Create or upgrade the schema when opening. Default: true
  bool migrate = true;
};

/// Opens the PostgreSQL store (migrating it first unless told not to). Refused while another
/// instance serves from the same database and schema; kUnavailable if the server cannot be
/// reached.
Result<std::unique_ptr<Store>> open_postgres_store(const PostgresOptions& options, const KeyspaceNames& keyspaces);

/// Creates or upgrades the schema (versioned migrations recorded in `schema.schema_version`).
Status migrate_postgres_store(const PostgresOptions& options, const KeyspaceNames& keyspaces);

}  // namespace idempay::storage
