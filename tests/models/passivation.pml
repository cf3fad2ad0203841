/* The passivation handshake between the directory (actors/src/directory.cpp) and a payment
   actor (actors/src/payment_actor.cpp), for one paymentId, under every interleaving.

   Directory::route()      under the directory's lock: spawn an actor if the key has none,
                           ++forwarded, return the actor; the message is sent after the lock
                           is released (Directory::send), so it can arrive much later.
   PaymentActor::on_routed ++handled for every routed message it takes from its mailbox.
   PaymentActor::on_idle   Directory::try_retire(id, self, handled) under the same lock: only
                           the registered actor, and only if forwarded == handled, removes the
                           entry; the actor then quits and drops whatever its mailbox holds.

   Checked: no message is ever sent to an actor that retired or left in its mailbox when it
   quits (nothing lost), and never two actors serve the key at once. The BROKEN_NO_COUNT_CHECK
   variant retires without comparing the counts; spin must find the lost message. */

#define ROUTERS 2          /* HTTP threads routing to the same key */
#define PER_ROUTER 2
#define MESSAGES (ROUTERS * PER_ROUTER)
#define INCARNATIONS MESSAGES  /* each spawn is caused by a route */
#define NONE 255

/* the directory's Entry for the key */
byte entry_actor = NONE;
byte entry_forwarded = 0;

chan mailbox[INCARNATIONS] = [MESSAGES] of { byte };
bool retired[INCARNATIONS];
byte spawned = 0;
byte serving = 0;  /* actors spawned and not retired */

proctype PaymentActor(byte self) {
  byte handled = 0;
  byte message;
end:
  do
  :: mailbox[self] ? message ->  /* on_routed */
       assert(!retired[self]);
       handled++
  :: atomic {                    /* on_idle: try_retire under the directory's lock */
       if
#ifdef BROKEN_NO_COUNT_CHECK
       :: entry_actor == self ->
#else
       :: entry_actor == self && entry_forwarded == handled ->
#endif
            entry_actor = NONE;
            retired[self] = true;
            serving--
       :: else -> skip
       fi
     };
     if
     :: retired[self] -> break
     :: else -> skip
     fi
  od;
  /* quit: a message still queued here would never be handled */
  assert(len(mailbox[self]) == 0)
}

proctype Router() {
  byte sent = 0;
  byte target;
  do
  :: sent < PER_ROUTER ->
     atomic {                    /* route(): under the directory's lock */
       if
       :: entry_actor == NONE ->
            entry_actor = spawned;
            entry_forwarded = 0;
            serving++;
            assert(serving <= 1);
            run PaymentActor(spawned);
            spawned++
       :: else -> skip
       fi;
       entry_forwarded++;
       target = entry_actor
     };
     assert(!retired[target]);   /* anon_send, after the lock */
     mailbox[target] ! sent;
     sent++
  :: else -> break
  od
}

init {
  atomic {
    run Router();
    run Router()
  }
}
