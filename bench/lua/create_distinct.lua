-- Create Payment with a fresh paymentId on every request (in-process stub).
-- Options: run=ID (id prefix), card=NUMBER (default: approved at once; 4222222222222224 stays
-- pending), callback=URL, body=full (the 2.3 KB storefront body instead of the short one), body=pix (a Pix
-- payment), body=boleto (a BankInvoice payment), delay=MS (mean pause before each request on a connection: a paced
-- load; pauses are drawn from an exponential distribution so that the connections send as
-- independent Poisson arrivals instead of in lockstep bursts).
local common = require("common")
setup = common.setup

function init(args)
  opts = common.options(args, {run = tostring(os.time()), delay = "0"})
  pause = tonumber(opts.delay)
  math.randomseed(os.time() * 100 + thread_id)
  counter = 0
  wrk.method = "POST"
  wrk.path = "/payments"
  common.gateway_headers()
end

function delay()
  if pause <= 0 then
    return 0
  end
  return math.floor(-pause * math.log(1 - math.random()) + 0.5)
end

function request()
  counter = counter + 1
  local id = string.format("%s-%d-%d", opts.run, thread_id, counter)
  if opts.body == "pix" then
    return wrk.format(nil, nil, nil, common.pix_create_body(id, opts.callback))
  end
  if opts.body == "boleto" then
    return wrk.format(nil, nil, nil, common.boleto_create_body(id, opts.callback))
  end
  local make = opts.body == "full" and common.full_create_body or common.create_body
  return wrk.format(nil, nil, nil, make(id, opts.card, opts.callback))
end
