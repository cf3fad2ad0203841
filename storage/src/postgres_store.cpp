// The PostgreSQL store: one table per keyspace (key bytea primary key, value bytea, etag
// bigint), the same contract as RocksDB. Commits are group-committed by one committer thread
// on its own connection: a group of batches is one transaction with synchronous commit, in
// two round trips whatever its size, each a pipeline of prepared statements (libpq's
// pipeline mode) —
//   1. BEGIN, and the current etag of every key a condition needs, locked (FOR UPDATE);
//   2. the conditions checked here (storage/src/conditions.hpp, the rule RocksDB uses), and
//      the writes of the batches that pass (a table's put-if-absent writes gathered into one
//      statement), then COMMIT. A conditional write fails its statement when it finds the
//      key not as read (put-if-absent: a plain INSERT, which a row inserted meanwhile
//      violates; compare-and-swap: an UPDATE .. WHERE etag = the one read, which raises
//      unless it touched the row), so that a writer this process does not know of (another
//      instance) can never be overwritten: the pipeline stops before its COMMIT, and the
//      group is rolled back and tried again instead.
// Keys and values travel as binary parameters of statements prepared once per connection:
// nothing taken from a request can reach a statement's text. Reads go through a bounded
// pool of connections, prepared the same way.
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
#include <numeric>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "conditions.hpp"
#include "idempay/base/crypto.hpp"
#include "idempay/base/fault.hpp"
#include "idempay/metrics/metrics.hpp"
#include "idempay/storage/store.hpp"
#include "commit_thread.hpp"
#include "reader_threads.hpp"

namespace idempay::storage {

namespace {

constexpr int kSchemaVersion = 2;
constexpr size_t kMaxGroup = 256;  // batches per transaction
constexpr int kGroupAttempts = 3;  // when a writer outside this process got in between

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

Error unavailable(std::string what) { return Error{ErrorCode::kUnavailable, "storage failure: " + std::move(what)}; }

// A group's conditional write found its key changed by a writer outside this process.
const std::string kContended = "storage failure: a concurrent writer changed a key of this group; retry";

// `bytes` bytes of `v`, most significant first (PostgreSQL's binary format).
void put_big_endian(std::string& out, uint64_t v, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

void put_u32(std::string& out, uint32_t v) { put_big_endian(out, v, 4); }

// A binary array parameter of one dimension and no nulls: each element its length and its
// bytes. `element_oid`: the elements' type (bytea 17, int8 20).
template <class Elements>
std::string binary_array(uint32_t element_oid, const Elements& elements) {
  std::string out;
  put_u32(out, 1);  // dimensions
  put_u32(out, 0);  // no nulls
  put_u32(out, element_oid);
  put_u32(out, static_cast<uint32_t>(elements.size()));
  put_u32(out, 1);  // lower bound
  for (std::string_view element : elements) {
    put_u32(out, static_cast<uint32_t>(element.size()));
    out += element;
  }
  return out;
}

constexpr uint32_t kByteaOid = 17;
constexpr uint32_t kInt8Oid = 20;

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
  std::string out;
  put_big_endian(out, static_cast<uint64_t>(v), 8);
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
constexpr const char* kConnectTimeoutSeconds = "2";

// Once one round trip has found PostgreSQL unreachable, every other statement of this store
// would wait out its own deadline in turn — requests queued behind a partition would take
// many deadlines to fail. For kHoldOff after that, every statement fails at once instead
// (retryably); the first one after it tries the link again.
class LinkBreaker {
public:
  static constexpr auto kHoldOff = std::chrono::seconds(2);

  bool open() const { return std::chrono::steady_clock::now().time_since_epoch().count() < open_until_.load(); }
  void trip() { open_until_.store((std::chrono::steady_clock::now() + kHoldOff).time_since_epoch().count()); }
  // A connection just opened proves the link is back (a new primary after a failover).
  void close() { open_until_.store(0); }

private:
  std::atomic<std::chrono::steady_clock::rep> open_until_{0};
};

class Connection {
public:
  static Result<std::unique_ptr<Connection>> open(const std::string& uri, std::shared_ptr<LinkBreaker> breaker) {
    // Keywords before the expanded URI: what the URI sets wins. TCP keepalives find a peer
    // that is gone (a machine down, a partition) while a connection sits idle in the pool;
    // tcp_user_timeout, one that stops acknowledging what was sent.
    const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "dbname", nullptr};
    const char* values[] = {kConnectTimeoutSeconds, "1", "5", "1", "3", "8000", uri.c_str(), nullptr};
    std::unique_ptr<Connection> c(new Connection(PQconnectdbParams(keys, values, 1), std::move(breaker)));
    if (PQstatus(c->conn_) != CONNECTION_OK) {
      return tl::unexpected(unavailable("cannot connect to PostgreSQL: " + c->last_error()));
    }
    // Notices (a ROLLBACK with no transaction open, an existing table) are not errors.
    PQsetNoticeProcessor(c->conn_, [](void*, const char*) {}, nullptr);
    PQsetnonblocking(c->conn_, 1);
    if (auto set = c->configure_session(); !set) {
      return tl::unexpected(set.error());
    }
    return c;
  }
  ~Connection() { PQfinish(conn_); }

  // Runs one or more statements (the simple protocol); one result per statement, or the
  // first failure. A broken connection is reset for the next caller.
  Result<std::vector<PgResult>> run(const std::string& sql) {
    if (auto ready = reconnect_if_broken(); !ready) {
      return tl::unexpected(ready.error());
    }
    return execute(sql);
  }

private:
  // run() on this session as it is: no reconnection, whatever the breaker says.
  Result<std::vector<PgResult>> execute(const std::string& sql) {
    if (PQsendQuery(conn_, sql.c_str()) == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    if (auto answered = await_answer(deadline()); !answered) {
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

public:
  // One read with binary parameters and binary results. A read is safe to ask twice: one
  // that finds its session dropped (the server restarted since this connection's last use)
  // is asked once more on a new session rather than failing its request.
  Result<PgResult> query(const std::string& sql, const std::vector<std::string_view>& params) {
    auto answer = query_once(sql, params);
    if (!answer && PQstatus(conn_) == CONNECTION_BAD && !breaker_->open()) {
      answer = query_once(sql, params);
    }
    return answer;
  }

  Result<PgResult> query_once(const std::string& sql, const std::vector<std::string_view>& params) {
    if (auto ready = reconnect_if_broken(); !ready) {
      return tl::unexpected(ready.error());
    }
    auto name = prepared(sql, static_cast<int>(params.size()));
    if (!name) {
      return tl::unexpected(name.error());
    }
    if (auto sent = send({sql, params}, *name); !sent) {
      return tl::unexpected(sent.error());
    }
    return one_result(PGRES_TUPLES_OK);
  }

  // A statement of a pipeline: its text, and its parameters in binary.
  struct Statement {
    std::string_view sql;  // outlives the call
    std::vector<std::string_view> params;
  };

  // `statements` in one round trip (libpq's pipeline mode), each prepared the first time
  // this session sees it; one result per statement, with binary columns. The first one to
  // fail skips the rest (the server's rule for a pipeline) and is the error returned.
  Result<std::vector<PgResult>> pipeline(const std::vector<Statement>& statements) {
    if (auto ready = reconnect_if_broken(); !ready) {
      return tl::unexpected(ready.error());
    }
    std::vector<std::string> names;  // prepared outside the pipeline: a failed one is not kept
    for (const auto& s : statements) {
      auto name = prepared(s.sql, static_cast<int>(s.params.size()));
      if (!name) {
        return tl::unexpected(name.error());
      }
      names.push_back(std::move(*name));
    }
    if (PQenterPipelineMode(conn_) == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    auto results = send_pipeline(statements, names);
    // A statement that failed leaves the session whole (its results were all read, and the
    // caller rolls back); results still on their way (a link lost, a deadline passed) do not.
    if (PQexitPipelineMode(conn_) == 0) {
      cut_off_ = true;  // this session starts afresh
    }
    return results;
  }

  // The name `sql` is prepared under on this session, preparing it the first time: a read
  // is then parsed and planned once per connection rather than once per call. The readers'
  // statements are few (one per keyspace and kind of read: values, limits included, are
  // parameters); past kMaxPrepared an empty name says to send the statement with its
  // parameters, in one round trip as before.
  Result<std::string> prepared(std::string_view sql, int params) {
    static constexpr size_t kMaxPrepared = 256;
    if (auto it = prepared_.find(sql); it != prepared_.end()) {
      return it->second;
    }
    if (prepared_.size() >= kMaxPrepared) {
      return std::string();
    }
    std::string name = "s" + std::to_string(prepared_.size());
    if (PQsendPrepare(conn_, name.c_str(), std::string(sql).c_str(), params, nullptr) == 0) {
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
    if (auto answered = await_answer(deadline()); !answered) {
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

  /// The session broke or was given up: what it was doing when that happened is not known.
  bool lost() const { return PQstatus(conn_) != CONNECTION_OK || cut_off_; }

  /// Ends the session as a lost link would: the next statement opens a new one.
  void give_up() { cut_off_ = true; }

  /// A new session now, whether or not the link is known to be down (settling a commit).
  Status reopen() {
    cut_off_ = true;
    return reconnect();
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

  static std::chrono::steady_clock::time_point deadline() { return std::chrono::steady_clock::now() + kRoundTrip; }

  // Queues `s` under its prepared `name` (empty: sent with its text).
  Status send(const Statement& s, const std::string& name) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats(s.params.size(), 1);
    for (auto p : s.params) {
      values.push_back(p.data() != nullptr ? p.data() : "");  // a null pointer would be SQL NULL
      lengths.push_back(static_cast<int>(p.size()));
    }
    auto count = static_cast<int>(s.params.size());
    int sent = name.empty() ? PQsendQueryParams(conn_, std::string(s.sql).c_str(), count, nullptr, values.data(),
                                                lengths.data(), formats.data(), 1)
                            : PQsendQueryPrepared(conn_, name.c_str(), count, values.data(), lengths.data(),
                                                  formats.data(), 1);
    if (sent == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    return {};
  }

  Result<std::vector<PgResult>> send_pipeline(const std::vector<Statement>& statements,
                                              const std::vector<std::string>& names) {
    for (size_t i = 0; i < statements.size(); ++i) {
      if (auto sent = send(statements[i], names[i]); !sent) {
        return tl::unexpected(sent.error());
      }
    }
    if (PQpipelineSync(conn_) == 0) {
      return tl::unexpected(unavailable(last_error()));
    }
    auto until = deadline();
    std::vector<PgResult> results;
    std::optional<Error> failure;
    for (;;) {
      if (auto answered = await_answer(until); !answered) {
        return tl::unexpected(answered.error());
      }
      PgResult r(PQgetResult(conn_));
      if (!r) {  // the end of one statement's results
        if (PQstatus(conn_) != CONNECTION_OK) {
          return tl::unexpected(unavailable(last_error()));
        }
        continue;
      }
      auto status = PQresultStatus(r.get());
      if (status == PGRES_PIPELINE_SYNC) {
        break;
      }
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && !failure) {
        failure = statement_error(r.get());
      }
      results.push_back(std::move(r));
    }
    if (failure) {
      return tl::unexpected(*failure);
    }
    return results;
  }

  // A statement's failure; a conditional write that found its key changed says so.
  static Error statement_error(PGresult* r) {
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    std::string_view code = state != nullptr ? state : "";
    if (code == "23505" || code == "22012") {  // unique_violation, division_by_zero: see WriteStatements
      return Error{ErrorCode::kUnavailable, kContended};
    }
    return unavailable(PQresultErrorMessage(r));
  }

  // Sends what is queued and waits until the next answer is in, until `deadline`; past
  // that the connection is given up (cut_off_), to be opened again by the next statement.
  Status await_answer(std::chrono::steady_clock::time_point deadline) {
    // An answer already read (the rest of a pipeline's) is taken without waiting for more.
    int flushed = PQflush(conn_);
    while (flushed != 0 || PQisBusy(conn_) != 0) {
      if (flushed < 0) {
        return make_error(ErrorCode::kUnavailable, "PostgreSQL: " + last_error());
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        cut_off_ = true;
        breaker_->trip();
        return make_error(ErrorCode::kUnavailable, "PostgreSQL did not answer within 5 s; reconnecting");
      }
      pollfd fd{PQsocket(conn_), static_cast<short>(POLLIN | (flushed != 0 ? POLLOUT : 0)), 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
        cut_off_ = true;
        return make_error(ErrorCode::kUnavailable, "PostgreSQL: poll failed");
      }
      if ((fd.revents & (POLLIN | POLLERR | POLLHUP)) != 0 && PQconsumeInput(conn_) == 0) {
        return make_error(ErrorCode::kUnavailable, "PostgreSQL: " + last_error());
      }
      if (flushed != 0) {
        flushed = PQflush(conn_);
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
    if (!lost()) {
      return {};
    }
    return reconnect();
  }

  Status reconnect() {
    cut_off_ = false;
    prepared_.clear();  // a new session has none
    PQreset(conn_);
    if (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) {
      (void)PQexitPipelineMode(conn_);  // a fresh session has no results pending
    }
    PQsetnonblocking(conn_, 1);
    metrics::count_store_reconnection(PQstatus(conn_) == CONNECTION_OK);
    if (PQstatus(conn_) != CONNECTION_OK) {
      breaker_->trip();
      return tl::unexpected(unavailable("cannot reconnect to PostgreSQL: " + last_error()));
    }
    auto configured = configure_session();
    cut_off_ = !configured;  // never used unconfigured: the next statement starts again
    if (configured) {
      breaker_->close();
    }
    return configured;
  }

  // Every statement of the store finds its rows by primary key, and is prepared once per
  // session: its plan is made once, with the table's statistics of that moment. A plan made
  // while a table was a page or two (a new database) scans it whole, and goes on doing so as
  // it grows until the next ANALYZE, up to a minute of autovacuum later: at a few thousand
  // payments a second, a lock read per commit group scanning a growing audit table cut the
  // rate sixfold. Sequential scans are therefore ruled out for these sessions.
  // No statement_timeout, whatever the role or database sets: a COMMIT cancelled while it waits
  // for the synchronous standby is reported committed (with a warning) although one node
  // alone has it. A round trip that takes too long is ended by closing the session instead,
  // and the group's outcome found out (PostgresStore::settle).
  Status configure_session() {
    if (auto set = execute("SET enable_seqscan = off; SET statement_timeout = 0"); !set) {
      return tl::unexpected(set.error());
    }
    return {};
  }

  PGconn* conn_;
  std::shared_ptr<LinkBreaker> breaker_;  // shared by the store's connections
  bool cut_off_ = false;  // a round trip timed out: the session is in an unknown state
  std::map<std::string, std::string, std::less<>> prepared_;  // statement text -> its name in this session
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

// The committer's statements on one table; parameters $1 key, $2 value, $3 etag, $4 the
// etag a conditional write expects to find. Each has a form for many rows, its parameters
// arrays of the same (`.._many`), which a commit group uses for two rows or more.
struct WriteStatements {
  explicit WriteStatements(const std::string& table)
      : lock("SELECT key, etag FROM " + table + " WHERE key = ANY($1) ORDER BY key FOR UPDATE"),
        put("INSERT INTO " + table + " VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, "
            "etag = EXCLUDED.etag"),
        put_many("INSERT INTO " + table + " (key, value, etag) SELECT * FROM unnest($1::bytea[], $2::bytea[], "
                 "$3::int8[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, etag = EXCLUDED.etag"),
        remove("DELETE FROM " + table + " WHERE key = $1"),
        remove_many("DELETE FROM " + table + " WHERE key = ANY($1::bytea[])"),
        // A plain INSERT: a row inserted since the group read the key violates the primary key.
        insert("INSERT INTO " + table + " VALUES ($1, $2, $3)"),
        insert_many("INSERT INTO " + table + " (key, value, etag) SELECT * FROM unnest($1::bytea[], $2::bytea[], "
                    "$3::int8[])"),
        // The group locked the rows it read, so these touch every one; should one not, the
        // division by zero (1 over "as many rows touched as named") fails the statement rather
        // than the group committing.
        swap("WITH w AS (UPDATE " + table + " SET value = $2, etag = $3 WHERE key = $1 AND etag = $4 RETURNING 1) "
             "SELECT 1 / count(*) FROM w"),
        swap_many("WITH w AS (UPDATE " + table + " AS t SET value = v.value, etag = v.etag FROM unnest($1::bytea[], "
                  "$2::bytea[], $3::int8[], $4::int8[]) AS v(key, value, etag, previous) WHERE t.key = v.key AND "
                  "t.etag = v.previous RETURNING 1) SELECT 1 / (count(*) = cardinality($1::bytea[]))::int FROM w"),
        remove_if("WITH w AS (DELETE FROM " + table + " WHERE key = $1 AND etag = $2 RETURNING 1) "
                  "SELECT 1 / count(*) FROM w"),
        remove_if_many("WITH w AS (DELETE FROM " + table + " AS t USING unnest($1::bytea[], $2::int8[]) AS "
                       "v(key, previous) WHERE t.key = v.key AND t.etag = v.previous RETURNING 1) "
                       "SELECT 1 / (count(*) = cardinality($1::bytea[]))::int FROM w") {}

  std::string lock;  // the etags of $1 (bytea[]), locked in key order
  std::string put, put_many;              // blind
  std::string remove, remove_many;        // blind
  std::string insert, insert_many;        // put-if-absent
  std::string swap, swap_many;            // compare-and-swap
  std::string remove_if, remove_if_many;  // delete-if-etag ($2)
};

struct Tables {
  std::string schema;                // quoted
  std::string marks;                 // quoted, schema-qualified: each committer's last group
  std::vector<std::string> names;    // quoted, schema-qualified, by keyspace index
  std::vector<WriteStatements> writes;  // by keyspace index
};

// The statements of a group's second round trip. Writes of one kind to one table go as one
// statement (`INSERT .. SELECT FROM unnest(..)`, `UPDATE .. FROM unnest(..)`, ..., each as
// all-or-nothing as its one-row form): a create's nine rows cost a group a handful of
// statements, not one each. Rows are independent, so only the writes to one row must keep
// their order: the n-th write to a row in the group goes in the n-th round of statements.
class GroupWrites {
public:
  explicit GroupWrites(const std::vector<WriteStatements>& sql) : sql_(sql) {}

  /// The write `w`, which found `previous` (0: absent) and writes `etag`.
  void add(const Write& w, uint64_t previous, uint64_t etag) {
    bool checked = !w.blind || w.expected_etag;
    Kind kind;
    if (w.value) {
      kind = !checked ? Kind::kPut : previous == 0 ? Kind::kInsert : Kind::kSwap;
    } else if (checked && previous == 0) {
      return;  // a conditional delete of what is absent already
    } else {
      kind = checked ? Kind::kRemoveIf : Kind::kRemove;
    }
    size_t ks = w.keyspace.index;
    size_t round = writes_to_row_[{ks, w.key}]++;
    if (rounds_.size() <= round) {
      rounds_.resize(round + 1);
    }
    Rows& rows = rounds_[round][{ks, kind}];
    rows.keys.push_back(w.key);
    if (w.value) {
      rows.values.push_back(*w.value);
      rows.etags.push_back(int8(etag));
    }
    if (kind == Kind::kSwap || kind == Kind::kRemoveIf) {
      rows.previous.push_back(int8(previous));
    }
  }

  /// Every round's statements, then `mark` (the group's own row), then COMMIT.
  std::vector<Connection::Statement> then_commit(Connection::Statement mark) {
    std::vector<Connection::Statement> statements;
    for (const auto& round : rounds_) {
      for (const auto& [table_and_kind, rows] : round) {
        statements.push_back(statement(sql_[table_and_kind.first], table_and_kind.second, rows));
      }
    }
    statements.push_back(std::move(mark));
    statements.push_back({"COMMIT", {}});
    return statements;
  }

private:
  enum class Kind { kInsert, kSwap, kPut, kRemoveIf, kRemove };
  struct Rows {
    std::vector<std::string_view> keys, values, etags, previous;
  };

  Connection::Statement statement(const WriteStatements& sql, Kind kind, const Rows& rows) {
    if (rows.keys.size() == 1) {
      switch (kind) {
        case Kind::kInsert: return {sql.insert, {rows.keys[0], rows.values[0], rows.etags[0]}};
        case Kind::kSwap: return {sql.swap, {rows.keys[0], rows.values[0], rows.etags[0], rows.previous[0]}};
        case Kind::kPut: return {sql.put, {rows.keys[0], rows.values[0], rows.etags[0]}};
        case Kind::kRemoveIf: return {sql.remove_if, {rows.keys[0], rows.previous[0]}};
        case Kind::kRemove: return {sql.remove, {rows.keys[0]}};
      }
    }
    return many_rows_statement(sql, kind, in_key_order(rows));
  }

  Connection::Statement many_rows_statement(const WriteStatements& sql, Kind kind, const Rows& rows) {
    auto keys = bytea_array(rows.keys);
    switch (kind) {
      case Kind::kInsert: return {sql.insert_many, {keys, bytea_array(rows.values), int8_array(rows.etags)}};
      case Kind::kSwap:
        return {sql.swap_many, {keys, bytea_array(rows.values), int8_array(rows.etags), int8_array(rows.previous)}};
      case Kind::kPut: return {sql.put_many, {keys, bytea_array(rows.values), int8_array(rows.etags)}};
      case Kind::kRemoveIf: return {sql.remove_if_many, {keys, int8_array(rows.previous)}};
      case Kind::kRemove: break;
    }
    return {sql.remove_many, {keys}};
  }

  // A statement writes its rows in key order (bytea's: bytes compared unsigned, as
  // string_view compares them), whatever order the group's batches gave. Every instance then
  // takes the locks of the rows it inserts or upserts in one order, so two groups writing the
  // same new keys wait for each other instead of deadlocking (PostgreSQL would hold both for
  // its deadlock_timeout, long enough for a lease to lapse). The rows the conditions read are
  // locked in key order already (read_etags).
  static Rows in_key_order(const Rows& rows) {
    std::vector<size_t> order(rows.keys.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows.keys[a] < rows.keys[b]; });
    auto pick = [&order](const std::vector<std::string_view>& column) {
      std::vector<std::string_view> sorted;
      if (!column.empty()) {
        sorted.reserve(order.size());
        for (size_t i : order) {
          sorted.push_back(column[i]);
        }
      }
      return sorted;
    };
    return Rows{pick(rows.keys), pick(rows.values), pick(rows.etags), pick(rows.previous)};
  }

  std::string_view bytea_array(const std::vector<std::string_view>& v) { return keep(binary_array(kByteaOid, v)); }
  std::string_view int8_array(const std::vector<std::string_view>& v) { return keep(binary_array(kInt8Oid, v)); }
  std::string_view int8(uint64_t v) { return keep(big_endian_int8(static_cast<int64_t>(v))); }
  std::string_view keep(std::string bytes) { return arena_.emplace_back(std::move(bytes)); }

  const std::vector<WriteStatements>& sql_;
  std::map<std::pair<size_t, std::string_view>, size_t> writes_to_row_;  // by keyspace and key
  std::vector<std::map<std::pair<size_t, Kind>, Rows>> rounds_;           // by table and kind
  std::deque<std::string> arena_;  // the parameters the statements point into
};

Result<Tables> tables_for(const PostgresOptions& options, const KeyspaceNames& keyspaces) {
  if (!is_plain_identifier(options.schema)) {
    return make_error(ErrorCode::kInvalidArgument, "PostgreSQL schema name '" + options.schema
                                                       + "' must be lower-case letters, digits and '_'");
  }
  Tables t;
  t.schema = "\"" + options.schema + "\"";
  t.marks = t.schema + ".commit_marks";
  for (const auto& name : keyspaces) {
    if (!is_plain_identifier(name)) {
      return make_error(ErrorCode::kInvalidArgument, "keyspace name '" + name + "' is not a plain identifier");
    }
    t.names.push_back(t.schema + ".\"kv_" + name + "\"");
    t.writes.emplace_back(t.names.back());
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
  // Version 2: each committer's last group, so that a group whose COMMIT went unanswered can
  // be found committed or not (PostgresStore::settle).
  if (current < 2) {
    tables += "CREATE TABLE IF NOT EXISTS " + t.marks
              + " (owner bytea PRIMARY KEY, group_id bigint NOT NULL, at timestamptz NOT NULL);"
              + "INSERT INTO " + t.schema + ".schema_version VALUES (2);";
  }
  if (auto r = c.run(tables + "COMMIT;"); !r) {
    rollback(c);
    return tl::unexpected(r.error());
  }
  return {};
}

struct PostgresCommit {
  Batch batch;
  CommitCallback done;
};

// The committer's log of an outage: a line when group commits start failing, one every
// kEvery while they go on failing (how many), one when one succeeds again (after how long) —
// not a line per group, which in a failover would be hundreds a second. Committer thread only.
class OutageLog {
public:
  static constexpr auto kEvery = std::chrono::seconds(10);

  // `started`: when the failing group began (a COMMIT hanging on a dead primary counts).
  void failed(size_t batches, const Error& e, std::chrono::steady_clock::time_point started) {
    auto now = std::chrono::steady_clock::now();
    metrics::store_writable(false, started);
    if (groups_ == 0) {
      since_ = now;
    }
    ++groups_;
    batches_ += batches;
    if (groups_ == 1 || now - last_line_ >= kEvery) {
      spdlog::warn("store: group commits failing for {:.1f} s ({} groups, {} commits so far): {}", seconds(now),
                   groups_, batches_, e.message);
      last_line_ = now;
    }
  }

  void succeeded() {
    metrics::store_writable(true);
    if (groups_ == 0) {
      return;
    }
    spdlog::warn("store: group commits succeed again after {:.1f} s ({} groups, {} commits failed)",
                 seconds(std::chrono::steady_clock::now()), groups_, batches_);
    groups_ = batches_ = 0;
  }

private:
  double seconds(std::chrono::steady_clock::time_point now) const {
    return std::chrono::duration<double>(now - since_).count();
  }

  std::chrono::steady_clock::time_point since_, last_line_;
  size_t groups_ = 0, batches_ = 0;
};

// What became of one attempt at a group.
struct GroupAttempt {
  enum class Result { kCommitted, kRolledBack, kUnknown } result;
  Error error;  // unless committed
  bool contended = false;  // rolled back because a writer outside this process got in between
  bool settled = false;    // rolled back, found out after its answer was lost: a primary answers again
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
                   {[this](std::vector<PostgresCommit>& group) { commit_group(group); }, kMaxGroup, {}, {}}) {}

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

  Result<std::optional<Entry>> last_in(Keyspace ks, std::string_view from, std::string_view below) override {
    auto rows = rows_where(ks, "key >= $1 AND key < $2", {from, below}, 1, true);
    if (!rows) {
      return tl::unexpected(rows.error());
    }
    return rows->empty() ? std::optional<Entry>() : std::optional<Entry>(std::move(rows->front()));
  }

  std::optional<Result<std::optional<Entry>>> last_in_if_in_memory(Keyspace, std::string_view,
                                                                  std::string_view) override {
    return std::nullopt;  // every read asks the server
  }

  void commit(Batch batch, CommitCallback done) override {
    if (read_only_) {
      return done(make_error(ErrorCode::kUnavailable, "the store is open read-only"));
    }
    if (auto k = known_keyspaces(batch, tables_.names.size()); !k) {
      return done(tl::unexpected(k.error()));
    }
    PostgresCommit pending{std::move(batch), std::move(done)};
    if (!committer_.push(pending)) {
      pending.done(make_error(ErrorCode::kUnavailable, "store is closing"));
    }
  }

private:
  // Up to `limit` rows of `ks` matching `condition`, in key order (`newest_first`: reversed).
  Result<std::vector<std::pair<std::string, Versioned>>> rows_where(Keyspace ks, const std::string& condition,
                                                                      const std::vector<std::string_view>& params,
                                                                      size_t limit, bool newest_first = false) {
    if (auto k = known(ks); !k) {
      return tl::unexpected(k.error());
    }
    // The limit is a parameter (int8, binary: big-endian), not text: one prepared statement
    // serves every limit an operator's scan asks for.
    std::string limit_bytes = big_endian_int8(static_cast<int64_t>(std::min<size_t>(limit, 1u << 30)));
    std::vector<std::string_view> all = params;
    all.push_back(limit_bytes);
    std::string sql = "SELECT value, etag, key FROM " + tables_.names[ks.index] + " WHERE " + condition
                      + (newest_first ? " ORDER BY key DESC LIMIT $" : " ORDER BY key LIMIT $") + std::to_string(all.size());
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

  // BEGIN, and the etag of every key some condition of `group` needs, read and locked in
  // one round trip.
  Result<std::map<std::pair<size_t, std::string>, uint64_t>> read_etags(const std::vector<PostgresCommit>& group) {
    // Sorted, so that rows are always locked in the same order.
    std::map<size_t, std::set<std::string>> keys;
    for (const auto& p : group) {
      for (const Write& w : p.batch) {
        if (!w.blind || w.expected_etag) {
          keys[w.keyspace.index].insert(w.key);
        }
      }
    }
    std::deque<std::string> arrays;  // the statements' parameters point into it
    std::vector<Connection::Statement> statements{{kBegin, {}}};
    for (const auto& [ks, names] : keys) {
      statements.push_back({tables_.writes[ks].lock, {arrays.emplace_back(binary_array(kByteaOid, names))}});
    }
    auto results = writer_->pipeline(statements);
    if (!results) {
      return tl::unexpected(results.error());
    }
    std::map<std::pair<size_t, std::string>, uint64_t> etags;
    size_t at = 1;  // after BEGIN
    for (const auto& entry : keys) {
      PGresult* r = (*results)[at++].get();
      for (int i = 0; i < PQntuples(r); ++i) {
        etags[{entry.first, std::string(PQgetvalue(r, i, 0), PQgetlength(r, i, 0))}] =
            big_endian_u64(PQgetvalue(r, i, 1));
      }
    }
    return etags;
  }

  void commit_group(std::vector<PostgresCommit>& group) {
    std::vector<CommitResult> results;
    auto started = std::chrono::steady_clock::now();
    for (int attempt = 1;; ++attempt) {
      auto outcome = try_group(group, results);
      if (outcome.result == GroupAttempt::Result::kUnknown) {
        metrics::store_writable(false, started);  // no writable database while the group is unsettled
        outcome = settle(std::move(outcome), started + kSettleLimit);
      }
      bool committed = outcome.result == GroupAttempt::Result::kCommitted;
      metrics::observe_commit_group(group.size(), metrics::seconds_since(started), committed);
      if (committed) {
        outage_.succeeded();
        break;
      }
      if ((outcome.contended && !link_->open()) || outcome.settled) {
        if (attempt < kGroupAttempts) {
          continue;
        }
      }
      if (!outcome.contended) {
        outage_.failed(group.size(), outcome.error, started);
      }
      results.assign(group.size(), CommitResult(tl::unexpected(outcome.error)));
      break;
    }
    for (size_t i = 0; i < group.size(); ++i) {
      group[i].done(std::move(results[i]));
    }
  }

  // A group whose COMMIT was sent but never answered (the connection broke, or the server
  // stopped answering) may or may not have committed; nothing of it is answered until that is
  // known. A new session (through haproxy or a multi-host URI: on whichever node is primary
  // now) reads the committer's mark. Its statement is an upsert of the mark's row, which waits
  // for a transaction still writing that row (the lost COMMIT, should it still be waiting for
  // its standby on the same server) and whose own COMMIT is synchronous: once it is answered,
  // the group's fate is what the cluster keeps. Tried until `limit`; past it the group stays
  // unknown and fails retryably, and its payments' actors drop their copies: the next request
  // reads what was stored.
  GroupAttempt settle(GroupAttempt lost, std::chrono::steady_clock::time_point limit) {
    spdlog::warn("store: a group commit's answer was lost ({}); finding out whether it committed",
                 lost.error.message);
    while (std::chrono::steady_clock::now() < limit) {
      if (writer_->reopen()) {
        auto read = writer_->pipeline({{kBegin, {}}, {settle_sql_, {owner_}}, {"COMMIT", {}}});
        if (read && PQntuples((*read)[1].get()) == 1) {
          bool committed = big_endian_u64(PQgetvalue((*read)[1].get(), 0, 0)) == group_seq_;
          spdlog::warn("store: the group whose answer was lost {}", committed ? "had committed" : "had not committed");
          if (committed) {
            return {GroupAttempt::Result::kCommitted, {}};
          }
          return {GroupAttempt::Result::kRolledBack, lost.error, false, true};
        }
        rollback(*writer_);
      }
      std::this_thread::sleep_for(kSettleInterval);
    }
    spdlog::warn("store: no primary answered within {} s; the group's outcome stays unknown",
                 std::chrono::duration_cast<std::chrono::seconds>(kSettleLimit).count());
    return lost;
  }

  // One transaction for the whole group; `results` gets each batch's etags or its conflict.
  // A failed attempt leaves no transaction open.
  GroupAttempt try_group(const std::vector<PostgresCommit>& group, std::vector<CommitResult>& results) {
    results.clear();
    auto stored = read_etags(group);
    if (!stored) {
      rollback(*writer_);
      return {GroupAttempt::Result::kRolledBack, stored.error(), stored.error().message == kContended};
    }
    StagedEtags staged;
    GroupWrites writes(tables_.writes);
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
          writes.add(p.batch[i], previous[i], (*etags)[i]);
        }
      }
      results.push_back(std::move(etags));
    }
    std::string seq = big_endian_int8(static_cast<int64_t>(++group_seq_));
    if (fault::inject("commit-never-sent")) {
      writer_->give_up();
      return {GroupAttempt::Result::kUnknown, unavailable("fault injected: session dropped before COMMIT")};
    }
    auto committed = writer_->pipeline(writes.then_commit({mark_sql_, {owner_, seq}}));
    if (committed && fault::inject("commit-answer-lost")) {
      writer_->give_up();
      return {GroupAttempt::Result::kUnknown, unavailable("fault injected: COMMIT's answer dropped")};
    }
    if (!committed) {
      if (writer_->lost()) {
        return {GroupAttempt::Result::kUnknown, committed.error()};
      }
      rollback(*writer_);  // the pipeline stopped before COMMIT
      return {GroupAttempt::Result::kRolledBack, committed.error(), committed.error().message == kContended};
    }
    return {GroupAttempt::Result::kCommitted, {}};
  }

  static constexpr std::string_view kBegin = "BEGIN";
  static constexpr auto kSettleLimit = std::chrono::seconds(20);
  static constexpr auto kSettleInterval = std::chrono::milliseconds(250);

  Tables tables_;
  // This committer's row in the marks table, and the number of its last group: each group
  // writes it, so that one whose COMMIT went unanswered can be found committed or not.
  std::string owner_ = crypto::random_bytes(16);
  uint64_t group_seq_ = 0;
  std::string mark_sql_ = "INSERT INTO " + tables_.marks + " VALUES ($1, $2, now()) ON CONFLICT (owner) DO UPDATE "
                          "SET group_id = EXCLUDED.group_id, at = EXCLUDED.at";
  std::string settle_sql_ = "INSERT INTO " + tables_.marks + " VALUES ($1, 0, now()) ON CONFLICT (owner) DO UPDATE "
                            "SET at = EXCLUDED.at RETURNING group_id";
  OutageLog outage_;
  std::shared_ptr<LinkBreaker> link_;     // open while PostgreSQL is known unreachable
  std::unique_ptr<Connection> writer_;    // the committer's; none when read-only
  std::unique_ptr<ConnectionPool> pool_;  // the readers'; outlives the threads (joined first)
  bool read_only_;
  ReaderThreads readers_;
  CommitThread<PostgresCommit> committer_;  // starts after everything it uses exists
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
  std::vector<std::string> required = tables->names;
  required.push_back(tables->marks);
  for (const auto& name : required) {
    if (auto r = (*writer)->run("SELECT 1 FROM " + name + " LIMIT 0"); !r) {
      // A table missing is for an operator to fix, not a wait (unless the link failed).
      return make_error((*writer)->lost() ? ErrorCode::kUnavailable : ErrorCode::kInvalidArgument,
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
