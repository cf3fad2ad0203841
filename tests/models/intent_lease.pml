/* Two connector instances sharing one store, one paymentId, under every interleaving and a
   crash of either instance at any step: the durable intent, compare-and-swap and lease
   protocol of Create Payment.

   Names follow the code (domain/src/payment_core.cpp, carried out by actors/src/payment_actor.cpp):
     on_create       load the record (state and etag) and decide; or, for the first Create
                     Payment an instance's actor gets (presume_new), decide as if the record
                     were absent, without a read: the put-if-absent below is then the check
     write_intent    put-if-absent of the record in state PROCESSING, with the writer's lease,
                     before the acquirer hears of the payment
     call_authorize  the acquirer call, keyed by the paymentId (the same key on every instance
                     and every attempt: the acquirer charges a key once)
     on_authorized   the result written by compare-and-swap on the etag the writer holds;
                     a writer that lost the race reloads and follows the record
     reconcile       a record left PROCESSING whose lease has expired is taken over, by
                     compare-and-swap, and its call made again under the same key
   The lease (owner and expiry in the record) is the rule the several-instances store adds
   (docs/models.md): a live lease is never taken over; a lease expires only once its holder
   has stopped acting (it crashed, or its call's deadline, shorter than the lease, passed).

   Checked:
     at most one charge at the acquirer;
     every final answer the gateway gets is the acquirer's outcome, and once given, the
       stored record holds it for good (no acknowledged answer lost or changed);
     at most one instance acts on the payment at a time;
     a charge is always recorded somewhere the connector finds it (a record exists) when the
       gateway stops asking.
   Broken variants, each of which spin must refute:
     BROKEN_CALL_BEFORE_INTENT   the acquirer is called before the intent is durable
     BROKEN_KEY_PER_INSTANCE     each instance calls with a key of its own
     BROKEN_BLIND_INTENT         the intent is a plain put, not put-if-absent
     BROKEN_TRUSTED_PRESUMPTION  a create presumed new writes its intent whatever is stored
     BROKEN_BLIND_TAKEOVER       the takeover is written without the etag condition */

#define INSTANCES 2
#define CREATES 2      /* Create Payments each instance may receive (the gateway may stop early) */

#define ABSENT 0
#define PROCESSING 1
#define APPROVED 2
#define DENIED 3
#define NONE 255

/* the store: one record */
byte rec = ABSENT;
byte etag = 0;
byte lease_owner = NONE;
bool lease_live = false;

/* the acquirer: a ledger per key */
bool seen[INSTANCES];
byte outcome[INSTANCES];
byte charges = 0;
chan to_acquirer = [4] of { byte, byte };     /* key, instance to answer */
chan from_acquirer[INSTANCES] = [4] of { byte };

/* observers */
byte answered = NONE;        /* the first final answer the gateway got */
bool holding[INSTANCES];     /* the instance believes it holds the lease and acts */
bool crash_left[INSTANCES];  /* one crash per instance, at any step */
byte finished = 0;

inline answer(st) {
  if
  :: st == APPROVED || st == DENIED ->
       atomic {
         assert(st == outcome[0]);
         if
         :: answered == NONE -> answered = st
         :: else -> assert(answered == st)
         fi
       }
  :: else -> skip  /* "undefined": no final answer yet */
  fi
}

inline key_of(me) {
#ifdef BROKEN_KEY_PER_INSTANCE
  key = me
#else
  key = 0
#endif
}

/* Crashing drops everything the instance held in memory; its lease stays in the record until
   it expires, and a request it sent may still reach the acquirer. */
inline maybe_crash() {
  if
  :: crash_left[me] -> crash_left[me] = false; holding[me] = false; goto restart
  :: true -> skip
  fi
}

proctype Acquirer() {
  byte key, from;
end:
  do
  :: to_acquirer ? key, from ->
       atomic {
         if
         :: !seen[key] ->
              seen[key] = true;
              charges++;
              assert(charges <= 1);
              if
              :: outcome[0] = APPROVED
              :: outcome[0] = DENIED
              fi;
              outcome[key] = outcome[0]
         :: else -> skip
         fi;
         from_acquirer[from] ! outcome[key]
       }
  od
}

/* The lease of an owner that stopped acting expires at some moment. */
proctype Clock() {
end:
  do
  :: atomic { lease_live && lease_owner != NONE && !holding[lease_owner] -> lease_live = false }
  od
}

proctype Instance(byte me) {
  byte creates = 0;
  byte st, my_etag, key, result;
  bool live;
  bool fresh;  /* no read or presumption yet in this life: the actor may presume the payment new */
  bool presumed;
restart:
  fresh = true;
  do  /* a restarted instance forgets the answers addressed to its previous life */
  :: nempty(from_acquirer[me]) -> from_acquirer[me] ? result
  :: empty(from_acquirer[me]) -> break
  od;
  do
  :: creates == CREATES -> break
  :: creates < CREATES -> break  /* the gateway stops asking (it gave up, or had its answer) */
  :: creates < CREATES ->
       creates++;
       if
       :: atomic { st = rec; my_etag = etag; live = lease_live }; presumed = false  /* on_create: load */
       :: fresh -> st = ABSENT; my_etag = 0; live = false; presumed = true  /* presume_new: no read */
       fi;
       fresh = false;
       if
       :: st == APPROVED || st == DENIED -> answer(st)
       :: st == ABSENT ->
#ifdef BROKEN_CALL_BEFORE_INTENT
            key_of(me);
            to_acquirer ! key, me;
            maybe_crash();
#endif
            atomic {  /* write_intent */
#if defined(BROKEN_BLIND_INTENT)
              if
              :: true ->
#elif defined(BROKEN_TRUSTED_PRESUMPTION)
              if
              :: rec == ABSENT || presumed ->
#else
              if
              :: rec == ABSENT ->
#endif
                   rec = PROCESSING; etag++; my_etag = etag;
                   lease_owner = me; lease_live = true;
                   assert(!holding[1 - me]);
                   holding[me] = true
              :: else -> skip
              fi
            };
            if
            :: holding[me] -> goto authorize
            :: else -> atomic { st = rec }; answer(st)  /* lost the race: follow the winner */
            fi
       :: st == PROCESSING ->
            if
            :: !live ->
                 atomic {  /* reconcile: take the expired lease over */
#ifdef BROKEN_BLIND_TAKEOVER
                   if
                   :: true ->
#else
                   if
                   :: etag == my_etag && !lease_live ->
#endif
                        etag++; my_etag = etag;
                        lease_owner = me; lease_live = true;
                        assert(!holding[1 - me]);
                        holding[me] = true
                   :: else -> skip
                   fi
                 };
                 if
                 :: holding[me] -> goto authorize
                 :: else -> answer(PROCESSING)
                 fi
            :: else -> answer(PROCESSING)  /* another instance acts: "undefined" */
            fi
       fi
  od;
  goto done;

authorize:
  maybe_crash();
  key_of(me);
  to_acquirer ! key, me;  /* call_authorize */
  maybe_crash();
  from_acquirer[me] ? result;
  maybe_crash();
  atomic {  /* on_authorized: compare-and-swap on the etag held */
    if
    :: etag == my_etag -> rec = result; etag++; lease_live = false; st = rec
    :: else -> st = rec  /* someone else moved the record: follow it */
    fi;
    holding[me] = false
  };
  answer(st);
  goto restart;

done:
  finished++
}

/* Every final answer stays stored. */
active proctype Monitor() {
end:
  atomic { answered != NONE && rec != answered -> assert(false) }
}

/* When the gateway has stopped asking and the acquirer is idle: a charge has a record. */
active proctype Quiescence() {
end:
  atomic {
    finished == INSTANCES && empty(to_acquirer) ->
      assert(!(seen[0] || seen[1]) || rec != ABSENT)
  }
}

init {
  atomic {
    crash_left[0] = true;
    crash_left[1] = true;
    run Acquirer();
    run Clock();
    run Instance(0);
    run Instance(1)
  }
}
