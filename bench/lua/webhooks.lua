-- Signed acquirer webhooks, pre-signed by the harness (wrk's Lua has no HMAC), one per line of
-- file=PATH as "webhook-id<TAB>timestamp<TAB>signature<TAB>body". Thread t of threads=n sends
-- the lines i with i % n == t, each once, then stops. wrk waits out its -d, so the rate is
-- taken from this script's own clock: done() prints "window <seconds> <answers> <non-200>".
local common = require("common")
setup = common.setup

function init(args)
  local opts = common.options(args, {threads = "1"})
  local n = tonumber(opts.threads)
  events = {}
  local i = 0
  for line in io.lines(opts.file) do
    if i % n == thread_id then
      local id, ts, sig, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      events[#events + 1] = {id = id, ts = ts, sig = sig, body = body}
    end
    i = i + 1
  end
  sent, answered, failed = 0, 0, 0
  started, finished = nil, nil
  wrk.method = "POST"
  wrk.path = "/webhooks/acquirer"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  started = started or common.now()
  sent = math.min(sent + 1, #events)
  local e = events[sent]
  return wrk.format(nil, nil, {["webhook-id"] = e.id, ["webhook-timestamp"] = e.ts,
                               ["webhook-signature"] = e.sig}, e.body)
end

function response(status)
  answered = answered + 1
  if status ~= 200 then failed = failed + 1 end
  if answered >= #events and not finished then
    finished = common.now()
    wrk.thread:stop()
  end
end

function done()
  local first, last, total, bad = math.huge, 0, 0, 0
  for _, t in ipairs(common.threads) do
    first = math.min(first, t:get("started") or math.huge)
    last = math.max(last, t:get("finished") or common.now())  -- unfinished: up to now
    total = total + (t:get("answered") or 0)
    bad = bad + (t:get("failed") or 0)
  end
  io.write(string.format("window %.6f %d %d\n", last - first, total, bad))
end
