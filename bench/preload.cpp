// Fills a data directory with N approved card payments for the store-growth benchmark, through
// the connector's own payment engine (the same actors, records and audit trail as `serve`),
// without HTTP and without fsync: a benchmark fixture, never a way to run the service.
//
//   preload DATA_DIR COUNT [PREFIX]
//
// Payment ids are PREFIX-<i>. Writes are not synced, then flushed once at the end.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include "idempay/acquirers/stub.hpp"
#include "idempay/actors/payment_service.hpp"
#include "idempay/answers/answers.hpp"
#include "idempay/domain/keyspaces.hpp"
#include "idempay/protocol/ppp.hpp"
#include "idempay/storage/store.hpp"

namespace {

using namespace idempay;

// No callbacks: card payments answer synchronously and never cause one.
class NoCallbacks final : public actors::CallbackTransport {
public:
  void send(actors::CallbackAttempt, std::function<void(actors::CallbackResult)> done) override {
    done(actors::CallbackResult{200, {}, -1});
  }
};

std::string create_body(const std::string& id) {
  return R"({"paymentId":")" + id + R"(","transactionId":"tx-)" + id +
         R"(","reference":"ref","orderId":"order","paymentMethod":"Visa","value":31.9,"currency":"BRL",)"
         R"("installments":1,"merchantName":"bench","callbackUrl":"https://gateway.example/callback",)"
         R"("card":{"holder":"Bench","number":"4444333322221111","csc":"123",)"
         R"("expiration":{"month":"12","year":"2030"}}})";
}

// Keeps at most `limit` creates in flight.
class InFlight {
public:
  explicit InFlight(size_t limit) : limit_(limit) {}
  void acquire() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [this] { return count_ < limit_; });
    ++count_;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      --count_;
    }
    room_.notify_all();
  }
  void drain() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [this] { return count_ == 0; });
  }

private:
  size_t limit_;
  size_t count_ = 0;
  std::mutex mutex_;
  std::condition_variable room_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: preload DATA_DIR COUNT [PREFIX]\n");
    return 2;
  }
  const std::string prefix = argc > 3 ? argv[3] : "pre";
  const size_t count = std::stoull(argv[2]);
  storage::RocksOptions store_options{std::string(argv[1]) + "/rocksdb", false};
  store_options.read_only_existing_keys = domain::keyspaces_read_only_for_existing_keys();  // as the service opens it
  auto store = storage::open_rocks_store(store_options, domain::keyspace_names());
  if (!store) {
    std::fprintf(stderr, "preload: %s\n", store.error().message.c_str());
    return 1;
  }
  acquirer::StubAcquirer stub;
  NoCallbacks transport;
  actors::ServiceOptions options;
  static const answers::PppAnswers kAnswers;
  options.answers = &kAnswers;
  options.idle_timeout = std::chrono::milliseconds(200);  // keep the live actors few
  actors::PaymentService service(**store, stub, transport, options);
  if (auto started = service.start(); !started) {
    std::fprintf(stderr, "preload: %s\n", started.error().message.c_str());
    return 1;
  }
  InFlight in_flight(512);
  std::atomic<size_t> failed{0};
  const auto began = std::chrono::steady_clock::now();
  for (size_t i = 0; i < count; ++i) {
    std::string body = create_body(prefix + "-" + std::to_string(i));
    auto request = ppp::parse_create_payment(body);
    if (!request) {
      std::fprintf(stderr, "preload: %s\n", request.error().message.c_str());
      return 1;
    }
    in_flight.acquire();
    service.create_payment(std::move(*request), "shop", [&](actors::Reply reply) {
      if (reply.outcome != actors::Outcome::kDone) {
        ++failed;
      }
      in_flight.release();
    });
  }
  in_flight.drain();
  service.shutdown();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("{\"payments\": %zu, \"failed\": %zu, \"seconds\": %.1f}\n", count, failed.load(), seconds);
  return failed.load() == 0 ? 0 : 1;
}
