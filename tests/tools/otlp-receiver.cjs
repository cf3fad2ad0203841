// An OpenTelemetry collector for the tests: takes OTLP/HTTP trace exports (protobuf) at
// POST /v1/traces and decodes them with OpenTelemetry's own protobuf definitions (the
// @opentelemetry/otlp-transformer package, generated from the published .proto files), not with
// anything of idempay's. GET /spans: every span so far, ids in lower-case hex; GET /raw: every
// body received, base64, one per line. POST /mode {"mode": "ok" | "down" | "slow", "seconds": N}
// scripts what it answers: 200, 503, or 200 after N seconds.
// Usage: node otlp-receiver.cjs  (prints "port N" once listening on 127.0.0.1)
'use strict';
const http = require('http');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');

const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const spans = [];
const raw = [];
let mode = { mode: 'ok', seconds: 0 };
let batches = 0;

const hex = (bytes) => Buffer.from(bytes || []).toString('hex');

function value(v) {
  if (v.stringValue !== undefined && v.stringValue !== null && v.value === 'stringValue') return v.stringValue;
  if (v.value === 'intValue') return Number(v.intValue);
  if (v.value === 'boolValue') return v.boolValue;
  if (v.value === 'doubleValue') return v.doubleValue;
  return null;
}

function attributes(list) {
  const out = {};
  for (const kv of list || []) out[kv.key] = value(kv.value);
  return out;
}

function decode(body) {
  const message = Request.decode(body);  // throws on anything that is not the message
  for (const rs of message.resourceSpans) {
    const resource = attributes(rs.resource && rs.resource.attributes);
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        spans.push({
          traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId),
          traceState: s.traceState, name: s.name, kind: s.kind,
          start: String(s.startTimeUnixNano), end: String(s.endTimeUnixNano),
          attributes: attributes(s.attributes),
          links: (s.links || []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          status: s.status ? { code: s.status.code, message: s.status.message } : null,
          scope: ss.scope ? ss.scope.name : null, resource,
        });
      }
    }
  }
}

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.method === 'GET' && req.url === '/spans') return answer(res, 200, JSON.stringify({ batches, spans }));
    if (req.method === 'GET' && req.url === '/raw') return answer(res, 200, raw.map((b) => b.toString('base64')).join('\n'));
    if (req.method === 'POST' && req.url === '/mode') {
      mode = JSON.parse(body.toString());
      return answer(res, 200, '{}');
    }
    if (req.method !== 'POST' || req.url !== '/v1/traces') return answer(res, 404, '{}');
    if (req.headers['content-type'] !== 'application/x-protobuf') return answer(res, 415, '{}');
    if (mode.mode === 'down') return answer(res, 503, '{}');
    const take = () => {
      try {
        decode(body);
      } catch (e) {
        process.stderr.write(`undecodable export: ${e}\n`);
        return answer(res, 400, '{}');
      }
      raw.push(body);
      batches += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();  // an empty ExportTraceServiceResponse
    };
    if (mode.mode === 'slow') setTimeout(take, (mode.seconds || 10) * 1000);
    else take();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${server.address().port}\n`));
