// The PostgreSQL store: one table per keyspace (key bytea primary key, value bytea, etag
// bigint), the same contract as RocksDB. Commits are group-committed by one committer thread
// on its own connection: a group of batches is one transaction with synchronous commit, in
// three round trips whatever its size —
//   1. BEGIN, and the current etag of every key a condition needs, locked (FOR UPDATE);
//   2. the conditions checked here (storage/src/conditions.hpp, the rule RocksDB uses), and
//      the writes of the batches that pass as conditional statements whose row counts are
//      checked (put-if-absent: INSERT .. ON CONFLICT DO NOTHING; compare-and-swap: UPDATE ..
//      WHERE etag = the one read), so that a writer this process does not know of (another
//      instance) can never be overwritten: the group is rolled back and tried again instead;
//   3. COMMIT.
// Keys and values travel as hex literals ('\x..'): nothing taken from a request can reach
// the statement's text otherwise. Reads go through a bounded pool of connections, as
// statements prepared once per connection with binary parameters.
#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "conditions.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/storage/store.hpp"
#include "commit_thread.hpp"
#include "reader_threads.hpp"

namespace idempay::storage {

namespace {

constexpr int kSchemaVersion = 1;
constexpr size_t kMaxGroup = 256;  // batches per transaction
constexpr int kGroupAttempts = 3;  // when a writer outside this process got in between

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

Error unavailable(std::string what) { return Error{ErrorCode::kUnavailable, "storage failure: " + std::move(what)}; }

// 'x' as a bytea literal: hex digits only, whatever the bytes.
std::string bytea_literal(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'\\x";
  out.reserve(out.size() + bytes.size() * 2 + 1);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  out.push_back('\'');
  return out;
}

// An identifier we write into statements ourselves: lower-case letters, digits, '_'.
bool is_plain_identifier(std::string_view name) {
  if (name.empty() || name.size() > 48 || !(name[0] >= 'a' && name[0] <= 'z')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

uint64_t big_endian_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

// `v` as a binary int8 parameter: eight bytes, most significant first.
std::string big_endian_int8(int64_t v) {
  std::string out(8, '\0');
  auto u = static_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i, u >>= 8) {
    out[static_cast<size_t>(i)] = static_cast<char>(u & 0xff);
  }
  return out;
}

// The smallest byte string greater than every string starting with `prefix`; empty if none.
std::string prefix_upper_bound(std::string_view prefix) {
  std::string upper(prefix);
  while (!upper.empty() && static_cast<unsigned char>(upper.back()) == 0xff) {
    upper.pop_back();
  }
  if (!upper.empty()) {
    upper.back() = static_cast<char>(static_cast<unsigned char>(upper.back()) + 1);
  }
  return upper;
}

// A network partition that drops packets never closes the socket: without a deadline a
// statement would wait for an answer forever, and every request behind it too. A round trip
// longer than this fails retryably and the connection is opened afresh for the next one
// (connect_timeout bounds that, unless the URI sets its own).
constexpr auto kRoundTrip = std::chrono::seconds(5);
constexpr const char* kConnectTimeoutSeconds = "5";

// Once one round trip has found PostgreSQL unreachable, every other statement of this store
// would wait out its own deadline in turn — requests queued behind a partition would take
// many deadlines to fail. For kHoldOff after that, every statement fails at once instead
// (retryably); the first one after it tries the link again.
class LinkBreaker {
public:
  static constexpr auto kHoldOff = std::chrono::seconds(2);

  bool open() const { return std::chrono::steady_clock::now().time_since_epoch().count() < open_until_.load(); }
  void trip() { open_until_.store((std::chrono::steady_clock::now() + kHoldOff).time_since_epoch().count()); }

private:
  std::atomic<std::chrono::steady_clock::rep> open_until_{0};
};

class Connection {
public:
  static Result<std::unique_ptr<Connection>> open(const std::string& uri, std::shared_ptr<LinkBreaker> breaker) {
    // Keywords before the expanded URI: what the URI sets wins.
    const char* keys[] = {"connect_timeout", "dbname", nullptr};
    const char* values[] = {kConnectTimeoutSeconds, uri.c_str(), nullptr};
    std::unique_ptr<Connection> c(new Connection(PQconnectdbParams(keys, values, 1), std::move(breaker)));
    if (PQstatus(c->conn_) != CONNECTION_OK) {
      return tl::unexpected(unavailable("cannot connect to PostgreSQL: " + c->last_error()));
    }
    // Notices (a ROLLBACK with no transaction open, an existing table) are not errors.
    PQsetNoticeProcessor(c->conn_, [](void*, const char*) {}, nullptr);
    PQsetnonblocking(c->conn_, 1);
    return c;
  }
  ~Connection() { PQfinish(conn_); }

  // Runs one or more statements (the simple protocol); one result per statement, or the
  // first failure. A broken connection is reset for the next caller.
  Result<std::vector<PgResult>> run(const std::string& sql) {
    if (auto ready = reconnect_if_broken(); !ready) {
      return tl::unexpected(ready.error());
    }
    if (PQsendQuery(conn_, sql.c_str()) == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    if (auto answered = await_answer(); !answered) {
      return tl::unexpected(answered.error());
    }
    std::vector<PgResult> results;
    std::optional<Error> failure;
    while (PGresult* raw = PQgetResult(conn_)) {
      PgResult r(raw);
      auto status = PQresultStatus(r.get());
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && !failure) {
        failure = unavailable(PQresultErrorMessage(r.get()));
      }
      results.push_back(std::move(r));
    }
    if (failure) {
      return tl::unexpected(*failure);
    }
    return results;
  }

  // One statement with binary parameters and binary results.
  Result<PgResult> query(const std::string& sql, const std::vector<std::string_view>& params) {
    if (auto ready = reconnect_if_broken(); !ready) {
      return tl::unexpected(ready.error());
    }
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats(params.size(), 1);
    for (auto p : params) {
      values.push_back(p.data() != nullptr ? p.data() : "");  // a null pointer would be SQL NULL
      lengths.push_back(static_cast<int>(p.size()));
    }
    auto name = prepared(sql, static_cast<int>(params.size()));
    if (!name) {
      return tl::unexpected(name.error());
    }
    int sent = name->empty()
                   ? PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                                       lengths.data(), formats.data(), 1)
                   : PQsendQueryPrepared(conn_, name->c_str(), static_cast<int>(params.size()), values.data(),
                                         lengths.data(), formats.data(), 1);
    if (sent == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    return one_result(PGRES_TUPLES_OK);
  }

  // The name `sql` is prepared under on this session, preparing it the first time: a read
  // is then parsed and planned once per connection rather than once per call. The readers'
  // statements are few (one per keyspace and kind of read: values, limits included, are
  // parameters); past kMaxPrepared an empty name says to send the statement with its
  // parameters, in one round trip as before.
  Result<std::string> prepared(const std::string& sql, int params) {
    static constexpr size_t kMaxPrepared = 256;
    if (auto it = prepared_.find(sql); it != prepared_.end()) {
      return it->second;
    }
    if (prepared_.size() >= kMaxPrepared) {
      return std::string();
    }
    std::string name = "s" + std::to_string(prepared_.size());
    if (PQsendPrepare(conn_, name.c_str(), sql.c_str(), params, nullptr) == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    if (auto done = one_result(PGRES_COMMAND_OK); !done) {
      return tl::unexpected(done.error());
    }
    prepared_.emplace(sql, name);
    return name;
  }

  // The answer to the one statement just sent, which must have `status`.
  Result<PgResult> one_result(ExecStatusType status) {
    if (auto answered = await_answer(); !answered) {
      return tl::unexpected(answered.error());
    }
    PgResult r(PQgetResult(conn_));
    while (PGresult* extra = PQgetResult(conn_)) {
      PQclear(extra);
    }
    if (!r || PQresultStatus(r.get()) != status) {
      return tl::unexpected(unavailable(r ? PQresultErrorMessage(r.get()) : last_error()));
    }
    return r;
  }

  std::string last_error() const {
    std::string e = PQerrorMessage(conn_);
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) {
      e.pop_back();
    }
    return e;
  }

private:
  Connection(PGconn* conn, std::shared_ptr<LinkBreaker> breaker) : conn_(conn), breaker_(std::move(breaker)) {}

  // Sends what is queued and waits until the whole answer is in, within kRoundTrip; past
  // that the connection is given up (cut_off_), to be opened again by the next statement.
  Status await_answer() {
    auto deadline = std::chrono::steady_clock::now() + kRoundTrip;
    int flushed = 1;
    while (flushed != 0 || PQisBusy(conn_) != 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        cut_off_ = true;
        breaker_->trip();
        return make_error(ErrorCode::kUnavailable, "PostgreSQL did not answer within 5 s; reconnecting");
      }
      if (flushed != 0) {
        flushed = PQflush(conn_);
        if (flushed < 0) {
          return make_error(ErrorCode::kUnavailable, "PostgreSQL: " + last_error());
        }
      }
      pollfd fd{PQsocket(conn_), static_cast<short>(POLLIN | (flushed != 0 ? POLLOUT : 0)), 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
        cut_off_ = true;
        return make_error(ErrorCode::kUnavailable, "PostgreSQL: poll failed");
      }
      if ((fd.revents & (POLLIN | POLLERR | POLLHUP)) != 0 && PQconsumeInput(conn_) == 0) {
        return make_error(ErrorCode::kUnavailable, "PostgreSQL: " + last_error());
      }
    }
    return {};
  }

  // A connection the server dropped (a restart, a failover) is opened again for the next
  // statement; the one that found it broken has already failed, retryably.
  // Fails at once while the link is known to be down.
  Status reconnect_if_broken() {
    if (breaker_->open()) {
      return tl::unexpected(unavailable("PostgreSQL is unreachable; retry shortly"));
    }
    if (PQstatus(conn_) == CONNECTION_OK && !cut_off_) {
      return {};
    }
    cut_off_ = false;
    prepared_.clear();  // a new session has none
    PQreset(conn_);
    PQsetnonblocking(conn_, 1);
    if (PQstatus(conn_) != CONNECTION_OK) {
      breaker_->trip();
      return tl::unexpected(unavailable("cannot reconnect to PostgreSQL: " + last_error()));
    }
    return {};
  }

  PGconn* conn_;
  std::shared_ptr<LinkBreaker> breaker_;  // shared by the store's connections
  bool cut_off_ = false;  // a round trip timed out: the session is in an unknown state
  std::map<std::string, std::string> prepared_;  // statement text -> its name in this session
};

// A bounded set of connections: a reader waits for one rather than opening more.
class ConnectionPool {
public:
  void add(std::unique_ptr<Connection> c) { idle_.push_back(std::move(c)); }

  template <class Use>
  auto with(Use use) {
    std::unique_ptr<Connection> c;
    {
      std::unique_lock lock(mutex_);
      available_.wait(lock, [this] { return !idle_.empty(); });
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    auto result = use(*c);
    {
      std::lock_guard lock(mutex_);
      idle_.push_back(std::move(c));
    }
    available_.notify_one();
    return result;
  }

private:
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

// Ends a failed transaction; its own failure changes nothing (the connection is reset next).
void rollback(Connection& c) { (void)c.run("ROLLBACK"); }

struct Tables {
  std::string schema;                // quoted
  std::vector<std::string> names;    // quoted, schema-qualified, by keyspace index
};

Result<Tables> tables_for(const PostgresOptions& options, const KeyspaceNames& keyspaces) {
  if (!is_plain_identifier(options.schema)) {
    return make_error(ErrorCode::kInvalidArgument, "PostgreSQL schema name '" + options.schema
                                                       + "' must be lower-case letters, digits and '_'");
  }
  Tables t;
  t.schema = "\"" + options.schema + "\"";
  for (const auto& name : keyspaces) {
    if (!is_plain_identifier(name)) {
      return make_error(ErrorCode::kInvalidArgument, "keyspace name '" + name + "' is not a plain identifier");
    }
    t.names.push_back(t.schema + ".\"kv_" + name + "\"");
  }
  return t;
}

// Migrations, in order; the schema-version table says how many have run. Each runs in the
// transaction that records it, under a lock, so that instances starting together migrate once.
Status migrate(Connection& c, const Tables& t) {
  std::string sql = "BEGIN; SELECT pg_advisory_xact_lock(7231000001); CREATE SCHEMA IF NOT EXISTS " + t.schema + ";"
                    "CREATE TABLE IF NOT EXISTS " + t.schema + ".schema_version (version integer NOT NULL);";
  if (auto r = c.run(sql); !r) {
    rollback(c);
    return tl::unexpected(r.error());
  }
  auto version = c.run("SELECT coalesce(max(version), 0) FROM " + t.schema + ".schema_version");
  if (!version) {
    rollback(c);
    return tl::unexpected(version.error());
  }
  int current = std::atoi(PQgetvalue(version->front().get(), 0, 0));
  if (current > kSchemaVersion) {
    rollback(c);
    return make_error(ErrorCode::kInvalidArgument, "the database's schema is version " + std::to_string(current)
                                                       + ", newer than this idempay knows ("
                                                       + std::to_string(kSchemaVersion) + ")");
  }
  // Version 1: a table per keyspace. Keyspaces declared later get theirs on the next start.
  std::string tables;
  for (const auto& name : t.names) {
    tables += "CREATE TABLE IF NOT EXISTS " + name
              + " (key bytea PRIMARY KEY, value bytea NOT NULL, etag bigint NOT NULL);";
  }
  if (current < 1) {
    tables += "INSERT INTO " + t.schema + ".schema_version VALUES (1);";
  }
  if (auto r = c.run(tables + "COMMIT;"); !r) {
    rollback(c);
    return tl::unexpected(r.error());
  }
  return {};
}

struct PendingCommit {
  Batch batch;
  CommitCallback done;
};

class PostgresStore final : public Store {
public:
  PostgresStore(Tables tables, std::shared_ptr<LinkBreaker> link, std::unique_ptr<Connection> writer,
                std::unique_ptr<ConnectionPool> pool, size_t reader_threads, bool read_only)
      : tables_(std::move(tables)),
        link_(std::move(link)),
        writer_(std::move(writer)),
        pool_(std::move(pool)),
        read_only_(read_only),
        readers_(std::max<size_t>(reader_threads, 1)),
        committer_("idempay-commit",
                   {[this](std::vector<PendingCommit>& group) { commit_group(group); }, kMaxGroup, {}, {}}) {}

  ~PostgresStore() override {
    readers_.stop();
    committer_.close();
  }

  Result<std::optional<Versioned>> get(Keyspace ks, std::string_view key) override {
    if (auto k = known(ks); !k) {
      return tl::unexpected(k.error());
    }
    return pool_->with([&](Connection& c) -> Result<std::optional<Versioned>> {
      auto r = c.query("SELECT value, etag FROM " + tables_.names[ks.index] + " WHERE key = $1", {key});
      if (!r) {
        return tl::unexpected(r.error());
      }
      if (PQntuples(r->get()) == 0) {
        return std::optional<Versioned>();
      }
      return std::optional<Versioned>(row(r->get(), 0, 0));
    });
  }

  // Every read asks the server: the caller hands it to the reader threads.
  std::optional<Result<std::optional<Versioned>>> get_if_in_memory(Keyspace, std::string_view) override {
    return std::nullopt;
  }

  void read_async(std::function<void(Store&)> job) override {
    if (!readers_.submit([this, job] { job(*this); })) {
      job(*this);
    }
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan(Keyspace ks, std::string_view prefix,
                                                                size_t limit) override {
    std::string upper = prefix_upper_bound(prefix);
    std::vector<std::string_view> params{prefix};
    if (!upper.empty()) {
      params.push_back(upper);
    }
    return rows_where(ks, upper.empty() ? "key >= $1" : "key >= $1 AND key < $2", params, limit);
  }

  Result<std::vector<std::pair<std::string, Versioned>>> scan_after(Keyspace ks, std::string_view after,
                                                                      size_t limit) override {
    return rows_where(ks, "key > $1", {after}, limit);
  }

  void commit(Batch batch, CommitCallback done) override {
    if (read_only_) {
      return done(make_error(ErrorCode::kUnavailable, "the store is open read-only"));
    }
    if (auto k = known_keyspaces(batch, tables_.names.size()); !k) {
      return done(tl::unexpected(k.error()));
    }
    PendingCommit pending{std::move(batch), std::move(done)};
    if (!committer_.push(pending)) {
      pending.done(make_error(ErrorCode::kUnavailable, "store is closing"));
    }
  }

private:
  // Up to `limit` rows of `ks` matching `condition`, in key order.
  Result<std::vector<std::pair<std::string, Versioned>>> rows_where(Keyspace ks, const std::string& condition,
                                                                      const std::vector<std::string_view>& params,
                                                                      size_t limit) {
    if (auto k = known(ks); !k) {
      return tl::unexpected(k.error());
    }
    // The limit is a parameter (int8, binary: big-endian), not text: one prepared statement
    // serves every limit an operator's scan asks for.
    std::string limit_bytes = big_endian_int8(static_cast<int64_t>(std::min<size_t>(limit, 1u << 30)));
    std::vector<std::string_view> all = params;
    all.push_back(limit_bytes);
    std::string sql = "SELECT value, etag, key FROM " + tables_.names[ks.index] + " WHERE " + condition
                      + " ORDER BY key LIMIT $" + std::to_string(all.size());
    return pool_->with([&](Connection& c) -> Result<std::vector<std::pair<std::string, Versioned>>> {
      auto r = c.query(sql, all);
      if (!r) {
        return tl::unexpected(r.error());
      }
      std::vector<std::pair<std::string, Versioned>> out;
      for (int i = 0; i < PQntuples(r->get()); ++i) {
        out.emplace_back(std::string(PQgetvalue(r->get(), i, 2), PQgetlength(r->get(), i, 2)), row(r->get(), i, 0));
      }
      return out;
    });
  }

  static Versioned row(PGresult* r, int i, int first_column) {
    Versioned v;
    v.value.assign(PQgetvalue(r, i, first_column), PQgetlength(r, i, first_column));
    v.etag = big_endian_u64(PQgetvalue(r, i, first_column + 1));
    return v;
  }

  Status known(Keyspace ks) const {
    if (ks.index >= tables_.names.size()) {
      return make_error(ErrorCode::kInvalidArgument, "no keyspace " + std::to_string(ks.index));
    }
    return {};
  }

  // The etag of every key some condition of `group` needs, read and locked in one round trip.
  Result<std::map<std::pair<size_t, std::string>, uint64_t>> read_etags(const std::vector<PendingCommit>& group) {
    // Sorted, so that rows are always locked in the same order.
    std::map<size_t, std::set<std::string>> keys;
    for (const auto& p : group) {
      for (const Write& w : p.batch) {
        if (!w.blind || w.expected_etag) {
          keys[w.keyspace.index].insert(w.key);
        }
      }
    }
    std::string sql = "BEGIN;";
    for (const auto& [ks, names] : keys) {
      sql += "SELECT key, etag FROM " + tables_.names[ks] + " WHERE key IN (";
      for (const auto& key : names) {
        sql += bytea_literal(key) + ",";
      }
      sql.back() = ')';
      sql += " ORDER BY key FOR UPDATE;";
    }
    auto results = writer_->run(sql);
    if (!results) {
      return tl::unexpected(results.error());
    }
    std::map<std::pair<size_t, std::string>, uint64_t> etags;
    size_t at = 1;  // after BEGIN
    for (const auto& entry : keys) {
      size_t ks = entry.first;
      PGresult* r = (*results)[at++].get();
      for (int i = 0; i < PQntuples(r); ++i) {
        size_t length = 0;
        unsigned char* key = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r, i, 0)), &length);
        etags[{ks, std::string(reinterpret_cast<char*>(key), length)}] = std::stoull(PQgetvalue(r, i, 1));
        PQfreemem(key);
      }
    }
    return etags;
  }

  // The statement for one write that found `previous`, and the rows it must touch (-1: any).
  std::pair<std::string, int> statement(const Write& w, uint64_t previous, uint64_t etag) const {
    const std::string& table = tables_.names[w.keyspace.index];
    std::string key = bytea_literal(w.key);
    bool checked = !w.blind || w.expected_etag;
    if (!w.value) {
      if (!checked) {
        return {"DELETE FROM " + table + " WHERE key = " + key, -1};
      }
      if (previous == 0) {
        return {"", 0};  // absent already
      }
      return {"DELETE FROM " + table + " WHERE key = " + key + " AND etag = " + std::to_string(previous), 1};
    }
    std::string value = bytea_literal(*w.value);
    if (!checked) {
      return {"INSERT INTO " + table + " VALUES (" + key + "," + value + "," + std::to_string(etag)
                  + ") ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, etag = EXCLUDED.etag",
              -1};
    }
    if (previous == 0) {
      return {"INSERT INTO " + table + " VALUES (" + key + "," + value + "," + std::to_string(etag)
                  + ") ON CONFLICT DO NOTHING",
              1};
    }
    return {"UPDATE " + table + " SET value = " + value + ", etag = " + std::to_string(etag) + " WHERE key = " + key
                + " AND etag = " + std::to_string(previous),
            1};
  }

  void commit_group(std::vector<PendingCommit>& group) {
    std::vector<CommitResult> results;
    auto started = std::chrono::steady_clock::now();
    for (int attempt = 1;; ++attempt) {
      auto outcome = try_group(group, results);
      metrics::observe_commit_group(group.size(), metrics::seconds_since(started), outcome.has_value());
      if (outcome || attempt == kGroupAttempts || link_->open()) {
        if (!outcome) {
          spdlog::warn("store: a group of {} commits failed: {}", group.size(), outcome.error().message);
          results.assign(group.size(), CommitResult(tl::unexpected(outcome.error())));
        }
        break;
      }
      rollback(*writer_);
    }
    for (size_t i = 0; i < group.size(); ++i) {
      group[i].done(std::move(results[i]));
    }
  }

  // One transaction for the whole group; `results` gets each batch's etags or its conflict.
  Status try_group(const std::vector<PendingCommit>& group, std::vector<CommitResult>& results) {
    results.clear();
    auto stored = read_etags(group);
    if (!stored) {
      rollback(*writer_);
      return tl::unexpected(stored.error());
    }
    StagedEtags staged;
    std::string sql;
    std::vector<int> expected_rows;
    for (const auto& p : group) {
      std::vector<uint64_t> previous;
      auto etags = check_conditions(
          p.batch, staged,
          [&](const Write& w) -> Result<uint64_t> {
            auto it = stored->find({static_cast<size_t>(w.keyspace.index), w.key});
            return it == stored->end() ? 0 : it->second;
          },
          &previous);
      if (etags) {
        for (size_t i = 0; i < p.batch.size(); ++i) {
          auto [text, rows] = statement(p.batch[i], previous[i], (*etags)[i]);
          if (!text.empty()) {
            sql += text + ";";
            expected_rows.push_back(rows);
          }
        }
      }
      results.push_back(std::move(etags));
    }
    if (!sql.empty()) {
      auto written = writer_->run(sql);
      if (!written) {
        return tl::unexpected(written.error());
      }
      for (size_t i = 0; i < expected_rows.size(); ++i) {
        if (expected_rows[i] >= 0 && std::atoi(PQcmdTuples((*written)[i].get())) != expected_rows[i]) {
          return make_error(ErrorCode::kUnavailable, "a concurrent writer changed a key of this group; retry");
        }
      }
    }
    if (auto done = writer_->run("COMMIT"); !done) {
      return tl::unexpected(done.error());
    }
    return {};
  }

  Tables tables_;
  std::shared_ptr<LinkBreaker> link_;     // open while PostgreSQL is known unreachable
  std::unique_ptr<Connection> writer_;    // the committer's; none when read-only
  std::unique_ptr<ConnectionPool> pool_;  // the readers'; outlives the threads (joined first)
  bool read_only_;
  ReaderThreads readers_;
  CommitThread<PendingCommit> committer_;  // starts after everything it uses exists
};

}  // namespace

Status migrate_postgres_store(const PostgresOptions& options, const KeyspaceNames& keyspaces) {
  auto tables = tables_for(options, keyspaces);
  if (!tables) {
    return tl::unexpected(tables.error());
  }
  auto c = Connection::open(options.uri, std::make_shared<LinkBreaker>());
  if (!c) {
    return tl::unexpected(c.error());
  }
  return migrate(**c, *tables);
}

Result<std::unique_ptr<Store>> open_postgres_store(const PostgresOptions& options, const KeyspaceNames& keyspaces) {
  auto tables = tables_for(options, keyspaces);
  if (!tables) {
    return tl::unexpected(tables.error());
  }
  auto link = std::make_shared<LinkBreaker>();
  auto writer = Connection::open(options.uri, link);
  if (!writer) {
    return tl::unexpected(writer.error());
  }
  if (options.migrate && !options.read_only) {
    if (auto m = migrate(**writer, *tables); !m) {
      return tl::unexpected(m.error());
    }
  }
  // Every table must be there: a store opened without migrating names what is missing.
  for (const auto& name : tables->names) {
    if (auto r = (*writer)->run("SELECT 1 FROM " + name + " LIMIT 0"); !r) {
      return make_error(ErrorCode::kUnavailable,
                        "the database has no table " + name + " (run `idempay migrate --store ...`): " + r.error().message);
    }
  }
  auto pool = std::make_unique<ConnectionPool>();
  size_t connections = std::max<size_t>(options.reader_connections, 1);
  for (size_t i = 0; i < connections; ++i) {
    auto c = Connection::open(options.uri, link);
    if (!c) {
      return tl::unexpected(c.error());
    }
    pool->add(std::move(*c));
  }
  std::unique_ptr<Connection> committer;
  if (!options.read_only) {
    committer = std::move(*writer);
  }
  return std::unique_ptr<Store>(
      new PostgresStore(std::move(*tables), link, std::move(committer), std::move(pool), connections, options.read_only));
}

}  // namespace idempay::storage
