"""URL normalisation and key fingerprints, as drover's coordinator does them
(docs/PROTOCOL.md sections 4 and 4.1), so that a client can predict the
fingerprint the server answers with."""

import hashlib
import ipaddress
import struct


class URLRefused(ValueError):
    """The coordinator refuses this URL; its verdict reason token is ``bad-key``."""

    reason = "bad-key"


def fingerprint(crawler, processor, url):
    """The first 16 bytes of SHA-256 over the three fields, each with a u32 length."""
    h = hashlib.sha256()
    for s in (crawler, processor, url):
        b = s.encode("utf-8")
        h.update(struct.pack(">I", len(b)) + b)
    return h.digest()[:16]


def key_fingerprint(crawler, processor, raw_url):
    """Normalises raw_url and returns (normalised url, fingerprint of the key)."""
    u = normalize(raw_url)
    return u, fingerprint(crawler, processor, u)


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = frozenset(b"!$&'()*+,;=")
_PATH_CHARS = _UNRESERVED | _SUB_DELIMS | frozenset(b":@/")
_QUERY_CHARS = _PATH_CHARS | frozenset(b"?")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _pct(c):
    return b"%%%02X" % c


def _unhex2(s, i):
    """The byte of the escape "%XX" at s[i], or None if it is not one."""
    if i + 2 >= len(s) or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
        return None
    return int(s[i + 1:i + 3].decode(), 16)


def _escaped(s, part, allowed, raw):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # '%'
            v = _unhex2(s, i)
            if v is None:
                raise URLRefused("url %r: invalid percent escape in %s" % (raw, part))
            out += bytes([v]) if v in _UNRESERVED else _pct(v)
            i += 3
            continue
        out += bytes([c]) if c in allowed else _pct(c)
        i += 1
    return bytes(out)


def _remove_dot_segments(path):
    if b"/." not in path:
        return path
    inp, out = path, []
    while inp:
        if inp.startswith(b"../"):
            inp = inp[3:]
        elif inp.startswith(b"./"):
            inp = inp[2:]
        elif inp.startswith(b"/./"):
            inp = inp[2:]
        elif inp == b"/.":
            inp = b"/"
        elif inp.startswith(b"/../"):
            inp = inp[3:]
            if out:
                out.pop()
        elif inp == b"/..":
            inp = b"/"
            if out:
                out.pop()
        elif inp in (b".", b".."):
            inp = b""
        else:
            j = inp.find(b"/", 1)
            if j < 0:
                j = len(inp)
            out.append(inp[:j])
            inp = inp[j:]
    return b"".join(out)


def _host(raw, host):
    if not host:
        raise URLRefused("url %r: missing host" % raw)
    out = bytearray()
    i = 0
    while i < len(host):
        c = host[i]
        if c == 0x25:
            v = _unhex2(host, i)
            if v is None:
                raise URLRefused("url %r: invalid percent escape in host" % raw)
            i += 3
            if v in _UNRESERVED:
                out += bytes([v]).lower()
            elif v >= 0x80:
                out += _pct(v)
            else:
                raise URLRefused("url %r: host contains an escaped %r" % (raw, chr(v)))
            continue
        if c in _UNRESERVED or c in _SUB_DELIMS:
            out += bytes([c]).lower()
        elif c >= 0x80:
            out += _pct(c)
        else:
            raise URLRefused("url %r: host contains %r" % (raw, chr(c)))
        i += 1
    return bytes(out)


def _ipv6(raw, lit):
    addr, zone = lit, None
    if b"%" in lit:
        i = lit.index(b"%")
        if not lit[i:].startswith(b"%25"):
            raise URLRefused("url %r: IPv6 zone must be introduced by %%25" % raw)
        addr, zone = lit[:i], lit[i + 3:]
        if not zone:
            raise URLRefused("url %r: empty IPv6 zone" % raw)
        j = 0
        while j < len(zone):
            if zone[j] == 0x25:
                if _unhex2(zone, j) is None:
                    raise URLRefused("url %r: invalid percent escape in IPv6 zone" % raw)
                j += 3
                continue
            if zone[j] not in _UNRESERVED:
                raise URLRefused("url %r: IPv6 zone contains %r" % (raw, chr(zone[j])))
            j += 1
    try:
        ip = ipaddress.IPv6Address(addr.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise URLRefused("url %r: host [%s] is not an IPv6 address" % (raw, addr.decode("latin-1")))
    if ip.ipv4_mapped is not None:
        text = "::ffff:" + str(ip.ipv4_mapped)
    else:
        text = _rfc5952(ip.packed)
    return b"[" + text.encode() + (b"%25" + zone if zone is not None else b"") + b"]"


def _rfc5952(packed):
    groups = [packed[2 * g] << 8 | packed[2 * g + 1] for g in range(8)]
    best, best_len, g = -1, 1, 0
    while g < 8:
        if groups[g]:
            g += 1
            continue
        h = g
        while h < 8 and groups[h] == 0:
            h += 1
        if h - g > best_len:
            best, best_len = g, h - g
        g = h
    g, out = 0, ""
    while g < 8:
        if g == best:
            out += "::"
            g += best_len
            continue
        if g > 0 and g != best + best_len:
            out += ":"
        out += "%x" % groups[g]
        g += 1
    return out


def _port(raw, scheme, port):
    if not port:
        return b""
    digits = port[1:]
    if not digits:
        return b""
    n = 0
    for c in digits:
        if not 0x30 <= c <= 0x39:
            raise URLRefused("url %r: port %r is not a number" % (raw, digits.decode("latin-1")))
        n = n * 10 + c - 0x30
        if n > 65535:
            raise URLRefused("url %r: port out of range" % raw)
    if n == 0:
        raise URLRefused("url %r: port 0" % raw)
    if (scheme == b"http" and n == 80) or (scheme == b"https" and n == 443):
        return b""
    return b":%d" % n


def normalize(raw):
    """Returns the normal form of an absolute http(s) URL; raises :class:`URLRefused`."""
    b = raw.encode("utf-8")
    for i, c in enumerate(b):
        if c < 0x20 or c == 0x7F:
            raise URLRefused("url %r: control character at byte %d" % (raw, i))
    s = b.split(b"#", 1)[0]
    # scheme
    colon = -1
    for i, c in enumerate(s):
        if (0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A) or (i > 0 and (0x30 <= c <= 0x39 or c in b"+-.")):
            continue
        if c == 0x3A and i > 0:
            colon = i
        break
    if colon < 0:
        raise URLRefused("url %r: no scheme; want an absolute http:// or https:// URL" % raw)
    scheme, rest = s[:colon].lower(), s[colon + 1:]
    if scheme not in (b"http", b"https"):
        raise URLRefused("url %r: scheme %r is not supported" % (raw, scheme.decode()))
    if not rest.startswith(b"//"):
        raise URLRefused("url %r: missing host" % raw)
    rest = rest[2:]
    end = len(rest)
    for i, c in enumerate(rest):
        if c in b"/?":
            end = i
            break
    authority, tail = rest[:end], rest[end:]
    path, query = tail, None
    if b"?" in tail:
        path, query = tail.split(b"?", 1)
    out = scheme + b"://"
    hostport = authority
    if b"@" in authority:
        at = authority.rindex(b"@")
        userinfo, hostport = authority[:at], authority[at + 1:]
        i = 0
        while i < len(userinfo):
            c = userinfo[i]
            if c == 0x25:
                if _unhex2(userinfo, i) is None:
                    raise URLRefused("url %r: invalid percent escape in userinfo" % raw)
                i += 3
                continue
            if not (c in _UNRESERVED or c in _SUB_DELIMS or c == 0x3A):
                raise URLRefused("url %r: userinfo contains %r" % (raw, chr(c)))
            i += 1
        out += userinfo + b"@"
    if hostport.startswith(b"["):
        close = hostport.find(b"]")
        if close < 0:
            raise URLRefused("url %r: IPv6 host has no closing ']'" % raw)
        host, port = hostport[:close + 1], hostport[close + 1:]
        if port and port[:1] != b":":
            raise URLRefused("url %r: unexpected bytes after the IPv6 host" % raw)
        out += _ipv6(raw, host[1:close])
    else:
        host, port = hostport, b""
        if b":" in hostport:
            c = hostport.index(b":")
            host, port = hostport[:c], hostport[c:]
        out += _host(raw, host)
    out += _port(raw, scheme, port)
    if not path:
        out += b"/"
    else:
        out += _remove_dot_segments(_escaped(path, "path", _PATH_CHARS, raw))
    if query is not None:
        out += b"?" + _escaped(query, "query", _QUERY_CHARS, raw)
    return out.decode("utf-8")
