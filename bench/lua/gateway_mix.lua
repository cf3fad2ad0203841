-- What a gateway sends during a peak, over distinct payments: each payment is created (the
-- 2.3 KB storefront body), its Create Payment retried one to three times, settled once it is
-- answered, and one in five refunded once settled. Follow-ups are queued when the answer they
-- depend on arrives (read from the answer's paymentId), so a settlement never races the
-- create it settles; retries may overlap each other and the settlement, as a gateway's do.
-- Options: run=ID (id prefix). A payment whose follow-ups are still queued when wrk stops is
-- left as it is.
local common = require("common")
setup = common.setup

function init(args)
  opts = common.options(args, {run = tostring(os.time())})
  math.randomseed(os.time() * 100 + thread_id)
  counter = 0
  followups, head, tail = {}, 1, 0  -- requests due, oldest first (a queue: head..tail)
  expected = {}   -- paymentId -> answers still expected before it is forgotten
  bodies = {}     -- paymentId -> its Create Payment body, for the retries
  common.gateway_headers()
end

local function push(method_path, body)
  tail = tail + 1
  followups[tail] = {method_path, body}
end

function request()
  if head <= tail then
    local f = followups[head]
    followups[head] = nil
    head = head + 1
    return wrk.format("POST", f[1], nil, f[2])
  end
  counter = counter + 1
  local id = string.format("%s-%d-%d", opts.run, thread_id, counter)
  bodies[id] = common.full_create_body(id)
  return wrk.format("POST", "/payments", nil, bodies[id])
end

local function operation(id, kind, value)
  return string.format('{"requestId":"%s-%s","value":%s,"transactionId":"TX-%s","paymentId":"%s"}',
                       id, kind, value, id, id)
end

local function answered(id)
  expected[id] = expected[id] - 1
  if expected[id] <= 0 then
    expected[id], bodies[id] = nil, nil
  end
end

function response(status, headers, body)
  local id = body:match('"paymentId":"([^"]+)"')
  if not id or status >= 300 then
    return
  end
  if body:find('"settleId"', 1, true) then
    if math.random(5) == 1 then
      expected[id] = (expected[id] or 0) + 1
      push("/payments/" .. id .. "/refunds", operation(id, "refund", "31.9"))
    end
    if expected[id] then answered(id) end
  elseif body:find('"refundId"', 1, true) then
    if expected[id] then answered(id) end
  elseif expected[id] then
    answered(id)  -- a retry's answer
  elseif bodies[id] then
    local retries = math.random(3)
    expected[id] = retries + 1  -- the retries and the settlement
    for _ = 1, retries do
      push("/payments", bodies[id])
    end
    push("/payments/" .. id .. "/settlements", operation(id, "settle", "31.9"))
  end
end
