-- Create Payment with a fresh paymentId on every request (in-process stub).
-- Options: run=ID (id prefix), card=NUMBER (default: approved at once; 4222222222222224 stays
-- pending), callback=URL, delay=MS (pause before each request on a connection: a paced load).
local common = require("common")
setup = common.setup

function init(args)
  opts = common.options(args, {run = tostring(os.time()), delay = "0"})
  pause = tonumber(opts.delay)
  counter = 0
  wrk.method = "POST"
  wrk.path = "/payments"
  common.gateway_headers()
end

function delay()
  return pause
end

function request()
  counter = counter + 1
  local id = string.format("%s-%d-%d", opts.run, thread_id, counter)
  return wrk.format(nil, nil, nil, common.create_body(id, opts.card, opts.callback))
end
