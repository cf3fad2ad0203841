#pragma once
// A store's one committer thread and the queue in front of it, shared by the three stores.
// Callers queue commits from any thread and never wait; the committer takes what has gathered
// as a group and hands it to the store, which writes the group with one synced write and then
// completes each caller. Closing commits what was queued and refuses what comes after.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace idempay::storage {

template <class Pending>
class CommitThread {
public:
  struct Hooks {
    /// The store's work for one group, on the committer thread.
    std::function<void(std::vector<Pending>& group)> commit;
    /// The most commits in one group; 0: everything that has gathered.
    size_t max_group = 0;
    /// How long the committer may sleep with nothing queued before `wake` runs anyway
    /// (nullopt: until a commit comes). RocksDB: retrying a failed disk while idle.
    std::function<std::optional<std::chrono::milliseconds>()> idle_for;
    /// Runs on every wake-up, before the group is committed. Optional.
    std::function<void()> wake;
  };

  /// Starts the thread, named `name` for top -H, perf and gdb (at most 15 characters).
  CommitThread(const char* name, Hooks hooks)
      : hooks_(std::move(hooks)), thread_([this, name] {
          pthread_setname_np(pthread_self(), name);
          run();
        }) {}
  ~CommitThread() { close(); }
  CommitThread(const CommitThread&) = delete;
  CommitThread& operator=(const CommitThread&) = delete;

  /// Queues a commit; false (and `pending` untouched) once the store is closing.
  bool push(Pending& pending) {
    std::lock_guard lock(mutex_);
    if (closing_) {
      return false;
    }
    queue_.push_back(std::move(pending));
    // A busy committer takes the whole queue when it finishes its group: no wake-up needed.
    if (waiting_) {
      wake_.notify_one();
    }
    return true;
  }

  /// Commits what was queued, then stops the thread. Idempotent.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

private:
  void run() {
    std::vector<Pending> group;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        waiting_ = true;
        auto ready = [this] { return closing_ || !queue_.empty(); };
        auto idle = hooks_.idle_for ? hooks_.idle_for() : std::nullopt;
        if (idle) {
          wake_.wait_for(lock, *idle, ready);
        } else {
          wake_.wait(lock, ready);
        }
        waiting_ = false;
        if (queue_.empty() && closing_) {
          return;  // closing, and every commit handed to us is done
        }
        size_t take = hooks_.max_group == 0 ? queue_.size() : std::min(queue_.size(), hooks_.max_group);
        if (take == queue_.size()) {
          group.swap(queue_);  // the common case: all of it, nothing copied
        } else {
          std::move(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take), std::back_inserter(group));
          queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
        }
      }
      if (hooks_.wake) {
        hooks_.wake();
      }
      if (!group.empty()) {
        hooks_.commit(group);
        group.clear();
      }
    }
  }

  Hooks hooks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Pending> queue_;
  bool closing_ = false;
  bool waiting_ = false;
  std::thread thread_;  // starts after everything it uses exists
};

}  // namespace idempay::storage
