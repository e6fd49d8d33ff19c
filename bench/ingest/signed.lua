-- wrk script for bench/ingest/signatures.ts: POSTs one fixed body, with the headers of one line of a file
-- per request, cycling through the lines (each Standard Webhooks request needs its own webhook-id).
--   WRK_BODY_FILE     file holding the request body (required)
--   WRK_HEADERS_FILE  one request's headers a line, "Name: value" pairs separated by tabs (required)
-- done() prints "WRKJSON {...}" as bench/support/post.lua does; latencies in microseconds.

local function read(path)
  local file = assert(io.open(path, "rb"))
  local text = file:read("*a")
  file:close()
  return text
end

local body_file = os.getenv("WRK_BODY_FILE")
local headers_file = os.getenv("WRK_HEADERS_FILE")
if body_file == nil or headers_file == nil then
  error("WRK_BODY_FILE and WRK_HEADERS_FILE must be set")
end
local body = read(body_file)
local lines = {}
for line in io.lines(headers_file) do
  lines[#lines + 1] = line
end
local requests = {}
local i = 0

-- Every request is formatted once, before the run: what is measured is the server, not Lua.
function init(args)
  for n, line in ipairs(lines) do
    local headers = { ["Content-Type"] = "application/json" }
    for name, value in string.gmatch(line, "([^\t:]+): ([^\t]+)") do
      headers[name] = value
    end
    requests[n] = wrk.format("POST", nil, headers, body)
  end
end

request = function()
  i = i % #requests + 1
  return requests[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
