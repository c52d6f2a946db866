// Reads WARC files with the warcio package (webrecorder's, an
// implementation drover's tests did not write) and checks each: every
// record parses, a response record's HTTP head parses, and its payload's
// sha1 (base32) is its WARC-Payload-Digest. Prints one JSON line per
// record and exits 1 on the first mismatch.
//
// usage: WARCIO_DIR=dir-with-node_modules node warcverify.cjs FILE...
const { createRequire } = require('node:module');
const fs = require('node:fs');
const crypto = require('node:crypto');
const path = require('node:path');
const { WARCParser } = createRequire(path.join(process.env.WARCIO_DIR, 'x.js'))('warcio');

function base32(buf) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0, value = 0, out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  while (out.length % 8) out += '=';
  return out;
}

(async () => {
  for (const file of process.argv.slice(2)) {
    const parser = new WARCParser(fs.createReadStream(file));
    for await (const record of parser) {
      const type = record.warcType;
      const line = { file: path.basename(file), type, uri: record.warcTargetURI || '' };
      if (type === 'response') {
        line.status = record.httpHeaders && record.httpHeaders.statusCode;
        const payload = await record.readFully(false);
        const digest = 'sha1:' + base32(crypto.createHash('sha1').update(payload).digest());
        line.bytes = payload.length;
        line.digest_ok = digest === record.warcPayloadDigest;
        if (!line.digest_ok) {
          console.log(JSON.stringify(line));
          console.error(`${file}: ${line.uri}: payload digest ${record.warcPayloadDigest}, computed ${digest}`);
          process.exit(1);
        }
      }
      console.log(JSON.stringify(line));
    }
  }
})().catch((e) => { console.error(e); process.exit(2); });
