//! Types as the layout code needs them: members with bit-exact offsets, sizes, names.
//!
//! Offsets are kept in bits from the start of the outer object so that bitfields
//! (DW_AT_data_bit_offset, or DWARF 2/3's DW_AT_bit_offset counted from the storage
//! unit's most significant bit) and whole members are handled by one arithmetic.

use crate::dwarf::{flag, udata, Ctx, Die, DieRef, Res};
use gimli::{constants as c, AttributeValue};

/// Tags that only qualify or rename the type below them.
pub fn is_wrapper(t: c::DwTag) -> bool {
    matches!(
        t,
        c::DW_TAG_typedef | c::DW_TAG_const_type | c::DW_TAG_volatile_type | c::DW_TAG_atomic_type | c::DW_TAG_restrict_type
    )
}

/// Bytes spanned by `bits` bits (u64::div_ceil needs Rust 1.73).
pub fn bytes_of_bits(bits: u64) -> u64 {
    (bits + 7) / 8
}

pub fn is_aggregate(t: c::DwTag) -> bool {
    matches!(t, c::DW_TAG_structure_type | c::DW_TAG_class_type | c::DW_TAG_union_type)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Data,
    Base,
    Static,
}

pub struct Member {
    pub name: Option<String>,
    pub kind: Kind,
    /// Bit offset from the start of the containing type (None: not computable, e.g. a
    /// virtual base, or a static member).
    pub bits: Option<u64>,
    /// Set for bitfields only.
    pub bit_size: Option<u64>,
    pub ty: Option<DieRef>,
    /// Why `bits` is None, for error messages.
    pub virtual_base: bool,
}

/// A data_member_location: a constant, or (DWARF 2/3) the expression
/// `DW_OP_plus_uconst N` / `DW_OP_constu N`. Others (virtual bases) give None.
fn member_location(d: &Die) -> Option<u64> {
    let v = d.e.attr_value(c::DW_AT_data_member_location)?;
    let expr = match v {
        AttributeValue::Exprloc(e) => e.0.slice(),
        AttributeValue::Block(b) => b.slice(),
        AttributeValue::Sdata(s) => return u64::try_from(s).ok(),
        other => return other.udata_value(),
    };
    let (&op, rest) = expr.split_first()?;
    if op != c::DW_OP_plus_uconst.0 && op != c::DW_OP_constu.0 {
        return None;
    }
    let (mut val, mut shift) = (0u64, 0);
    for &b in rest {
        val |= u64::from(b & 0x7f).checked_shl(shift)?;
        shift += 7;
        if b & 0x80 == 0 {
            return Some(val);
        }
    }
    None
}

impl<'a> Ctx<'a> {
    /// Follows typedef/cv/atomic wrappers, and a stub's DW_AT_signature to its type
    /// unit; returns the first DIE that is none of these.
    pub fn strip(&self, r: DieRef) -> Res<Die<'a>> {
        let mut d = self.die(r)?;
        for _ in 0..64 {
            let next = if is_wrapper(d.e.tag) {
                self.ref_attr(&d, c::DW_AT_type)
            } else if d.e.attr(c::DW_AT_signature).is_some() {
                // a type unit's stub (GCC writes some without DW_AT_declaration)
                self.ref_attr(&d, c::DW_AT_signature)
            } else {
                None
            };
            match next {
                Some(n) => d = self.die(n)?,
                None => return self.complete(d),
            }
        }
        Err(format!("type chain too long at {:#x}", r.off))
    }

    /// A class known here only by declaration: its complete definition by name, when
    /// a later scan found one (see `Ctx::completions`); else the name is noted.
    fn complete(&self, d: Die<'a>) -> Res<Die<'a>> {
        let decl = matches!(
            d.e.tag,
            c::DW_TAG_structure_type | c::DW_TAG_class_type | c::DW_TAG_union_type | c::DW_TAG_enumeration_type
        ) && flag(&d, c::DW_AT_declaration);
        match decl.then(|| self.name(&d)).flatten().and_then(|name| self.completion(&name)) {
            Some(r) => self.die(r),
            None => Ok(d),
        }
    }

    pub fn members(&self, agg: DieRef) -> Res<Vec<Member>> {
        let le = self.d.le;
        let mut out = Vec::new();
        for d in self.children(agg)? {
            let kind = match d.e.tag {
                c::DW_TAG_inheritance => Kind::Base,
                c::DW_TAG_variable => Kind::Static,
                c::DW_TAG_member if flag(&d, c::DW_AT_external) || flag(&d, c::DW_AT_declaration) => Kind::Static,
                c::DW_TAG_member => Kind::Data,
                _ => continue,
            };
            let ty = self.ref_attr(&d, c::DW_AT_type);
            let loc = member_location(&d);
            let mut bits = if d.e.attr(c::DW_AT_data_member_location).is_some() { loc.map(|l| l * 8) } else { Some(0) };
            let bit_size = udata(&d, c::DW_AT_bit_size);
            if let Some(bs) = bit_size {
                if let Some(dbo) = udata(&d, c::DW_AT_data_bit_offset) {
                    bits = Some(dbo);
                } else if let Some(bo) = udata(&d, c::DW_AT_bit_offset) {
                    // DWARF 2/3: bit_offset counts from the MSB of a storage unit of
                    // DW_AT_byte_size bytes (else the type's size) at the location.
                    let unit = match udata(&d, c::DW_AT_byte_size) {
                        Some(s) => Some(s),
                        None => ty.map(|t| self.size_of(t)).transpose()?.flatten(),
                    };
                    bits = match (loc.or(Some(0)), unit) {
                        (Some(l), Some(u)) if le => (l * 8 + u * 8).checked_sub(bo + bs),
                        (Some(l), _) if !le => Some(l * 8 + bo),
                        _ => None,
                    };
                }
            }
            if kind == Kind::Static {
                bits = None;
            }
            let virtual_base = kind == Kind::Base && bits.is_none();
            out.push(Member { name: self.name(&d), kind, bits, bit_size, ty, virtual_base });
        }
        Ok(out)
    }

    /// Array dimensions of an array type DIE (None: unknown/flexible).
    pub fn dims(&self, arr: DieRef) -> Res<Vec<Option<u64>>> {
        let mut v = Vec::new();
        for s in self.children(arr)? {
            if s.e.tag != c::DW_TAG_subrange_type {
                continue;
            }
            let n = match udata(&s, c::DW_AT_count) {
                Some(n) => Some(n),
                None => match s.e.attr_value(c::DW_AT_upper_bound) {
                    // -1 (data forms all ones) marks a flexible array member.
                    Some(AttributeValue::Sdata(-1)) => Some(0),
                    Some(ub) => {
                        let lb = udata(&s, c::DW_AT_lower_bound).unwrap_or(0);
                        ub.udata_value().and_then(|u| (u + 1).checked_sub(lb))
                    }
                    None => None,
                },
            };
            v.push(n);
        }
        Ok(v)
    }

    /// Byte size of a type; None when unknown (void, functions, incomplete types).
    pub fn size_of(&self, r: DieRef) -> Res<Option<u64>> {
        let d = self.strip(r)?;
        if let Some(s) = udata(&d, c::DW_AT_byte_size) {
            return Ok(Some(s));
        }
        Ok(match d.e.tag {
            c::DW_TAG_pointer_type | c::DW_TAG_reference_type | c::DW_TAG_rvalue_reference_type => Some(self.address_size(&d)),
            c::DW_TAG_array_type => {
                let elem = self.ref_attr(&d, c::DW_AT_type);
                let es = match elem {
                    Some(e) => self.size_of(e)?,
                    None => None,
                };
                let mut n = es;
                for dim in self.dims(d.at)? {
                    n = n.zip(dim).map(|(a, b)| a * b);
                }
                n
            }
            c::DW_TAG_enumeration_type => match self.ref_attr(&d, c::DW_AT_type) {
                Some(t) => self.size_of(t)?,
                None => None,
            },
            _ => None,
        })
    }

    /// A C-like spelling of a type, from DWARF names (unqualified: DW_AT_name holds no
    /// namespace), e.g. "const trx_sys_t *", "srw_lock[4]", "atomic<bool>".
    pub fn type_name(&self, r: Option<DieRef>) -> String {
        self.type_name_depth(r, 0)
    }

    fn type_name_depth(&self, r: Option<DieRef>, depth: u32) -> String {
        let r = match r { Some(r) => r, None => return "void".into() };
        let d = match self.die(r) { Ok(d) => d, Err(_) => return "?".into() };
        if depth > 16 {
            return "...".into();
        }
        let inner = || self.type_name_depth(self.ref_attr(&d, c::DW_AT_type), depth + 1);
        let sig = || self.ref_attr(&d, c::DW_AT_signature).map(|s| self.type_name_depth(Some(s), depth + 1));
        match d.e.tag {
            c::DW_TAG_pointer_type => format!("{} *", inner()),
            c::DW_TAG_reference_type => format!("{} &", inner()),
            c::DW_TAG_rvalue_reference_type => format!("{} &&", inner()),
            c::DW_TAG_const_type => format!("const {}", inner()),
            c::DW_TAG_volatile_type => format!("volatile {}", inner()),
            c::DW_TAG_atomic_type => format!("_Atomic {}", inner()),
            c::DW_TAG_restrict_type => format!("{} restrict", inner()),
            c::DW_TAG_array_type => {
                let dims: String = self
                    .dims(r)
                    .unwrap_or_default()
                    .iter()
                    .map(|n| n.map_or("[]".into(), |n| format!("[{n}]")))
                    .collect();
                format!("{}{}", inner(), dims)
            }
            c::DW_TAG_subroutine_type => "function".into(),
            c::DW_TAG_ptr_to_member_type => format!("{} ::*", inner()),
            _ => match self.name(&d) {
                Some(n) => n,
                None => sig().unwrap_or_else(|| {
                    let kind = match d.e.tag {
                        c::DW_TAG_union_type => "union",
                        c::DW_TAG_enumeration_type => "enum",
                        _ => "struct",
                    };
                    format!("(anonymous {kind})")
                }),
            },
        }
    }

    /// Bits a member spans: its bit_size, else its type's size.
    pub fn member_bits(&self, m: &Member) -> Res<Option<u64>> {
        if let Some(b) = m.bit_size {
            return Ok(Some(b));
        }
        Ok(match m.ty {
            Some(t) => self.size_of(t)?.map(|s| s * 8),
            None => None,
        })
    }

    /// The integer value of DW_AT_const_value of `d`, typed by `ty` (its signedness
    /// and width; GCC writes unsigned constants as DW_FORM_sdata, sign-extended).
    pub fn const_value(&self, d: &Die<'a>, ty: Option<DieRef>) -> Res<Option<i128>> {
        let v = match d.e.attr_value(c::DW_AT_const_value) { Some(v) => v, None => return Ok(None) };
        let (raw, width, form_signed) = match v {
            AttributeValue::Data1(x) => (u64::from(x), 1, false),
            AttributeValue::Data2(x) => (u64::from(x), 2, false),
            AttributeValue::Data4(x) => (u64::from(x), 4, false),
            AttributeValue::Data8(x) => (x, 8, false),
            AttributeValue::Sdata(x) => (x as u64, 8, true),
            AttributeValue::Udata(x) => (x, 8, false),
            _ => return Ok(None),
        };
        let (mut signed, mut size) = (form_signed, width);
        if let Some(t) = ty {
            let s = self.strip(t)?;
            let base = if s.e.tag == c::DW_TAG_enumeration_type {
                match self.ref_attr(&s, c::DW_AT_type) {
                    Some(u) => Some(self.strip(u)?),
                    None => None,
                }
            } else {
                Some(s)
            };
            if let Some(b) = base {
                if let Some(AttributeValue::Encoding(e)) = b.e.attr_value(c::DW_AT_encoding) {
                    signed = matches!(e, c::DW_ATE_signed | c::DW_ATE_signed_char);
                }
                if let Some(n) = udata(&b, c::DW_AT_byte_size).filter(|n| (1..=8).contains(n)) {
                    size = n;
                }
            }
        }
        let bits = size * 8;
        let masked = if bits >= 64 { raw } else { raw & ((1u64 << bits) - 1) };
        let val = if signed && bits < 64 && masked >> (bits - 1) & 1 == 1 {
            i128::from(masked) - (1i128 << bits)
        } else if signed && bits == 64 {
            i128::from(masked as i64)
        } else {
            i128::from(masked)
        };
        Ok(Some(val))
    }
}
