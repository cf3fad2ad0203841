// The process's outbound connection budget: places up to its capacity, the rest wait in
// order, an idle connection is given up for a waiting call, a client that leaves gets nothing.
#include <gtest/gtest.h>

#include <vector>

#include "connection_budget.hpp"

namespace idempay::http::detail {
namespace {

struct Granted {
  std::vector<ConnectionBudget::SlotPtr> slots;
  ConnectionBudget::Grant grant() {
    return [this](ConnectionBudget::SlotPtr slot) { slots.push_back(std::move(slot)); };
  }
};

const int kClient = 0;
const int kOtherClient = 1;

TEST(ConnectionBudgetTest, CallsBeyondTheCapacityWaitInOrderForAPlaceGivenBack) {
  ConnectionBudget budget(2);
  budget.enrol(&kClient, [] {});
  Granted first, second;
  auto a = budget.acquire(&kClient, first.grant());
  auto b = budget.acquire(&kClient, first.grant());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(budget.acquire(&kClient, first.grant()), nullptr);
  EXPECT_EQ(budget.acquire(&kClient, second.grant()), nullptr);
  EXPECT_EQ(budget.open(), 2u);

  a.reset();  // a connection closes: its place goes to the call waiting longest
  ASSERT_EQ(first.slots.size(), 1u);
  EXPECT_TRUE(second.slots.empty());
  EXPECT_EQ(budget.open(), 2u);

  b.reset();
  ASSERT_EQ(second.slots.size(), 1u);
  first.slots.clear();
  second.slots.clear();
  EXPECT_EQ(budget.open(), 0u);  // every place given back once no one waits
}

TEST(ConnectionBudgetTest, AWaitingCallHasAnIdleConnectionClosedForIt) {
  ConnectionBudget budget(1);
  int asked_a = 0, asked_b = 0;
  budget.enrol(&kClient, [&asked_a] { ++asked_a; });
  static const int other = 1;
  budget.enrol(&other, [&asked_b] { ++asked_b; });
  Granted waiting;
  auto idle = budget.acquire(&other, waiting.grant());
  budget.set_idle(*idle, true);
  EXPECT_EQ(budget.acquire(&kClient, waiting.grant()), nullptr);
  EXPECT_EQ(asked_a, 0);
  EXPECT_EQ(asked_b, 1);  // the client holding the idle connection is asked to close it
  // A second waiter does not ask again for the same idle connection.
  EXPECT_EQ(budget.acquire(&kClient, waiting.grant()), nullptr);
  EXPECT_EQ(asked_b, 1);
  idle.reset();  // closed: the place passes to the first waiter
  EXPECT_EQ(waiting.slots.size(), 1u);
  budget.leave(&kClient);  // the second waiter is not granted the place when the test lets it go
}

TEST(ConnectionBudgetTest, AConnectionThatGoesIdleWhileACallWaitsIsAskedFor) {
  ConnectionBudget budget(1);
  int asked = 0;
  budget.enrol(&kClient, [&asked] { ++asked; });
  Granted waiting;
  auto busy = budget.acquire(&kClient, waiting.grant());
  EXPECT_EQ(budget.acquire(&kClient, waiting.grant()), nullptr);
  EXPECT_EQ(asked, 0);  // nothing idle to close yet
  budget.set_idle(*busy, true);  // its answer came and it was kept alive
  EXPECT_EQ(asked, 1);
  busy.reset();
  EXPECT_EQ(waiting.slots.size(), 1u);
}

TEST(ConnectionBudgetTest, AnIdleConnectionTakenBeforeItCouldBeClosedLeavesTheWaiterAskingAgain) {
  ConnectionBudget budget(2);
  int asked_a = 0, asked_b = 0;
  budget.enrol(&kClient, [&asked_a] { ++asked_a; });
  budget.enrol(&kOtherClient, [&asked_b] { ++asked_b; });
  Granted waiting;
  auto taken = budget.acquire(&kClient, waiting.grant());
  auto other = budget.acquire(&kOtherClient, waiting.grant());
  budget.set_idle(*taken, true);
  budget.set_idle(*other, true);
  EXPECT_EQ(budget.acquire(&kClient, waiting.grant()), nullptr);
  EXPECT_EQ(asked_a + asked_b, 1);
  // The client asked reused its idle connection before closing it: it says so, and the
  // budget asks the client still holding one.
  auto* asked_slot = asked_a == 1 ? taken.get() : other.get();
  budget.set_idle(*asked_slot, false);
  budget.eviction_missed();
  EXPECT_EQ(asked_a + asked_b, 2);
  EXPECT_EQ(asked_a, 1);
  EXPECT_EQ(asked_b, 1);
  budget.leave(&kClient);
}

TEST(ConnectionBudgetTest, AConnectionInUseIsNeverAskedFor) {
  ConnectionBudget budget(1);
  int asked = 0;
  budget.enrol(&kClient, [&asked] { ++asked; });
  Granted waiting;
  auto busy = budget.acquire(&kClient, waiting.grant());
  budget.set_idle(*busy, true);
  budget.set_idle(*busy, false);  // taken from the idle pool again
  EXPECT_EQ(budget.acquire(&kClient, waiting.grant()), nullptr);
  EXPECT_EQ(asked, 0);
}

TEST(ConnectionBudgetTest, AClientThatLeftIsGrantedNothing) {
  ConnectionBudget budget(1);
  static const int leaving = 2;
  budget.enrol(&leaving, [] {});
  budget.enrol(&kOtherClient, [] {});
  Granted gone, stays;
  auto held = budget.acquire(&kOtherClient, stays.grant());
  EXPECT_EQ(budget.acquire(&leaving, gone.grant()), nullptr);
  EXPECT_EQ(budget.acquire(&kOtherClient, stays.grant()), nullptr);
  budget.leave(&leaving);
  held.reset();
  EXPECT_TRUE(gone.slots.empty());
  EXPECT_EQ(stays.slots.size(), 1u);
}

}  // namespace
}  // namespace idempay::http::detail
