// The actor system's scheduler (scheduler.hpp): timeouts and delayed messages arrive as with
// CAF's own, and actors that end without a timeout leave its clock thread asleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <caf/all.hpp>

#include "scheduler.hpp"

namespace idempay::actors {
namespace {

// How often this process's thread named `name` went to sleep and was woken again.
long voluntary_switches_of(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) {
      continue;
    }
    std::ifstream status(task.path() / "status");
    const std::string field = "voluntary_ctxt_switches:";
    for (std::string line; std::getline(status, line);) {
      if (line.rfind(field, 0) == 0) {
        return std::stol(line.substr(field.size()));
      }
    }
  }
  return -1;
}

struct System {
  System() {
    config.module_factories.push_back(make_scheduler);
    config.set("scheduler.max-threads", 1);
    system = std::make_unique<caf::actor_system>(config);
  }
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
};

// Actors are spawned with an argument, as the service's are (CAF 0.17 dereferences a null
// pointer when a function actor takes none).
caf::behavior ends_when_told(caf::event_based_actor* self, std::atomic<int>* ended) {
  self->attach_functor([ended] { ++*ended; });
  return {[self](int) { self->quit(); }};
}

caf::behavior times_out(caf::event_based_actor* self, std::promise<void>* timed_out) {
  return {caf::after(std::chrono::milliseconds(20)) >> [self, timed_out] {
    timed_out->set_value();
    self->quit();
  }};
}

caf::behavior sends_itself_later(caf::event_based_actor* self, std::promise<int>* received) {
  self->delayed_send(self, std::chrono::milliseconds(20), 42);
  return {[self, received](int value) {
    received->set_value(value);
    self->quit();
  }};
}

TEST(SchedulerTest, ActorsThatEndWithoutTimeoutsLeaveTheClockAsleep) {
  System s;
  // The clock thread names itself once it runs, which may be after the system is built.
  long before = voluntary_switches_of("idempay-clock");
  for (int i = 0; i < 500 && before < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    before = voluntary_switches_of("idempay-clock");
  }
  ASSERT_GE(before, 0) << "no clock thread of this scheduler";
  constexpr int kActors = 2000;
  std::atomic<int> ended{0};
  for (int i = 0; i < kActors; ++i) {
    caf::anon_send(s.system->spawn(ends_when_told, &ended), 1);
  }
  s.system->await_all_actors_done();
  // An actor leaves the registry before its attached functors run: the last may still count.
  for (int i = 0; i < 500 && ended.load() < kActors; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ended.load(), kActors);
  // CAF's clock is woken for the end of every actor it is not already awake for (hundreds
  // here); this one only by its own timers, if at all.
  EXPECT_LT(voluntary_switches_of("idempay-clock") - before, 20);
}

TEST(SchedulerTest, TimeoutsAndDelayedMessagesStillArrive) {
  System s;
  std::promise<void> timed_out;
  std::promise<int> delayed;
  s.system->spawn(times_out, &timed_out);
  s.system->spawn(sends_itself_later, &delayed);
  EXPECT_EQ(timed_out.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto value = delayed.get_future();
  ASSERT_EQ(value.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(value.get(), 42);
}

}  // namespace
}  // namespace idempay::actors
