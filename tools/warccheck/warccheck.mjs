// warccheck reads a WARC file (gzipped or not) with the warcio npm package
// (an implementation independent of kspider's Go code) and prints one JSON
// object per record on stdout, for tests to compare with what was exported.
//
//   node warccheck.mjs FILE.warc.gz [--payload]
//
// Each line holds the record's offset, its WARC header fields (names as
// written), for response records the HTTP status line and header fields, and
// the raw payload's length and SHA-1 (hex, computed here with node's crypto);
// --payload adds the payload itself in base64. Exit status 1 with a message
// on stderr when warcio cannot parse the file.
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import { WARCParser } from "warcio";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--"));
const withPayload = args.includes("--payload");
if (!file) {
  process.stderr.write("usage: node warccheck.mjs FILE.warc[.gz] [--payload]\n");
  process.exit(2);
}

function pairs(headers) {
  const out = [];
  if (!headers) return out;
  for (const [name, value] of headers.entries()) out.push([name, value]);
  return out;
}

try {
  const parser = new WARCParser(createReadStream(file), { keepHeadersCase: true });
  for await (const record of parser) {
    const payload = await record.readFully(false);
    const line = {
      offset: parser.offset,
      type: record.warcType,
      targetURI: record.warcTargetURI ?? null,
      warcHeaders: pairs(record.warcHeaders.headers),
      statusline: record.httpHeaders ? record.httpHeaders.statusline : null,
      status: record.httpHeaders ? Number(record.httpHeaders.statusCode) : null,
      httpHeaders: pairs(record.httpHeaders ? record.httpHeaders.headers : null),
      payloadLength: payload.length,
      payloadSHA1: createHash("sha1").update(payload).digest("hex"),
    };
    if (withPayload) line.payload = Buffer.from(payload).toString("base64");
    process.stdout.write(JSON.stringify(line) + "\n");
  }
} catch (err) {
  process.stderr.write(`warccheck: ${file}: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}
