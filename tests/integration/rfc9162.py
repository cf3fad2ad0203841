"""RFC 9162's Merkle tree algorithms, written here from the RFC's text (sections 2.1.1,
2.1.3.2 and 2.1.4.2) for the tests only: an implementation independent of the connector's,
checked against RFC 6962's reference vectors in test_transparency_log.py."""
import hashlib
import struct


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(leaves):
    """MTH(D[n]) over the leaves' bytes."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def verify_inclusion(index, size, leaf, proof, root):
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(first, second, first_hash, second_hash, proof):
    if first > second:
        return False
    if first == second:
        return not proof and first_hash == second_hash
    if first == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


def receipt_leaf(payment_id: str, audit_seq: int, audit_head_hex: str) -> bytes:
    """A log leaf as docs/receipts.md defines it, from a receipt's claims."""
    pid = payment_id.encode()
    return b"\x01" + struct.pack(">H", len(pid)) + pid + struct.pack(">Q", audit_seq) + bytes.fromhex(audit_head_hex)
