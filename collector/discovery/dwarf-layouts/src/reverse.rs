//! Reverse queries: every member of an object with its offset (flatten), and the
//! member that holds a given offset (name_at), so "lock_sys+128" can be named.

use crate::dwarf::{DieRef, Res};
use crate::layout::{bytes_of_bits, is_aggregate, Kind};
use crate::query::Resolver;
use gimli::constants as c;

pub struct Entry {
    pub path: String,
    pub bits: u64,
    pub bit_size: Option<u64>,
    pub size: Option<u64>,
    pub ty: Option<DieRef>,
    /// Arrays: element count and stride in bytes.
    pub count: Option<u64>,
    pub stride: Option<u64>,
}

pub struct At {
    pub path: String,
    pub bits: u64,
    pub size_bits: Option<u64>,
    pub ty: Option<DieRef>,
    /// Bytes from the start of the member found to the offset asked for.
    pub delta: u64,
    /// The enclosing named members (and array elements), outermost first; the last
    /// is the member described above.
    pub chain: Vec<(String, u64, Option<u64>, Option<DieRef>)>,
}

/// An array's element type (None: more dimensions follow), count and stride in bytes.
type ArrayInfo = (Option<DieRef>, Option<u64>, Option<u64>);

impl Resolver<'_, '_> {
    /// An array type's first dimension, or None for other types.
    fn array(&self, t: DieRef) -> Res<Option<ArrayInfo>> {
        let s = self.ctx.strip(t)?;
        if s.e.tag != c::DW_TAG_array_type {
            return Ok(None);
        }
        let dims = self.ctx.dims(s.at)?;
        let elem = self.ctx.ref_attr(&s, c::DW_AT_type);
        let es = elem.map(|e| self.ctx.size_of(e)).transpose()?.flatten();
        // A multi-dimensional array is one of arrays: element = the rest of the dims.
        let rest: Option<u64> = dims.iter().skip(1).copied().product();
        if dims.len() > 1 {
            return Ok(Some((None, dims[0], es.zip(rest).map(|(a, b)| a * b))));
        }
        Ok(Some((elem, dims.first().copied().flatten(), es)))
    }

    /// Appends every data member under `agg` (bases merged in, anonymous structs and
    /// unions looked through), down to `max` path components.
    pub fn flatten(&self, agg: DieRef, prefix: &str, base: u64, depth: u32, max: u32, out: &mut Vec<Entry>) -> Res<()> {
        let ctx = self.ctx;
        for m in ctx.members(agg)? {
            let (off, t) = match (m.bits, m.ty) { (Some(off), Some(t)) => (off, t), _ => continue };
            let bits = base + off;
            let s = ctx.strip(t)?;
            if m.kind == Kind::Static {
                continue;
            }
            if m.kind == Kind::Base || m.name.is_none() {
                if is_aggregate(s.e.tag) {
                    self.flatten(s.at, prefix, bits, depth, max, out)?;
                }
                continue;
            }
            let path = format!("{prefix}.{}", m.name.as_deref().unwrap_or(""));
            let size = match m.bit_size {
                Some(b) => Some(bytes_of_bits(bits % 8 + b)),
                None => ctx.size_of(t)?,
            };
            let arr = self.array(t)?;
            let (count, stride) = arr.as_ref().map_or((None, None), |a| (a.1, a.2));
            out.push(Entry { path: path.clone(), bits, bit_size: m.bit_size, size, ty: Some(t), count, stride });
            if depth + 1 >= max {
                continue;
            }
            if is_aggregate(s.e.tag) {
                self.flatten(s.at, &path, bits, depth + 1, max, out)?;
            } else if let Some((Some(elem), _, _)) = arr {
                let es = ctx.strip(elem)?;
                if is_aggregate(es.e.tag) {
                    self.flatten(es.at, &format!("{path}[0]"), bits, depth + 1, max, out)?;
                }
            }
        }
        Ok(())
    }

    /// The innermost named member of `agg` covering byte `target`, with array indices.
    pub fn name_at(&self, agg: DieRef, prefix: &str, target: u64) -> Res<At> {
        let ctx = self.ctx;
        let tbits = target * 8;
        let mut best = At { path: prefix.to_string(), bits: 0, size_bits: ctx.size_of(agg)?.map(|s| s * 8), ty: Some(agg), delta: target, chain: vec![] };
        let mut chain = Vec::new();
        let (mut cur, mut start, mut path) = (agg, 0u64, prefix.to_string());
        for _ in 0..64 {
            let s = ctx.strip(cur)?;
            if is_aggregate(s.e.tag) {
                let mut next = None;
                for m in ctx.members(s.at)? {
                    let (off, t) = match (m.bits, m.ty, m.kind != Kind::Static) {
                        (Some(off), Some(t), true) => (off, t),
                        _ => continue,
                    };
                    let span = match ctx.member_bits(&m)? { Some(s) => s, None => continue };
                    let mb = start + off;
                    if mb <= tbits && tbits < mb + span {
                        next = Some((m, mb, span, t));
                        break;
                    }
                }
                let (m, mb, span, t) = match next { Some(n) => n, None => break };
                if let (Kind::Data, Some(n)) = (m.kind, &m.name) {
                    path = format!("{path}.{n}");
                    chain.push((path.clone(), mb, Some(span), Some(t)));
                    best = At { path: path.clone(), bits: mb, size_bits: Some(span), ty: Some(t), delta: (tbits - mb) / 8, chain: vec![] };
                }
                (cur, start) = (t, mb);
            } else if let Some((elem, count, Some(stride))) = self.array(cur)? {
                if stride == 0 {
                    break;
                }
                let i = (tbits - start) / (stride * 8);
                if count.map_or(false, |n| i >= n) {
                    break;
                }
                start += i * stride * 8;
                path = format!("{path}[{i}]");
                chain.push((path.clone(), start, Some(stride * 8), elem));
                best = At { path: path.clone(), bits: start, size_bits: Some(stride * 8), ty: elem, delta: (tbits - start) / 8, chain: vec![] };
                match elem {
                    Some(e) => cur = e,
                    None => break, // multi-dimensional: stop at the first index
                }
            } else {
                break;
            }
        }
        best.chain = chain;
        Ok(best)
    }
}
