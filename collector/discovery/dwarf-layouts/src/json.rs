//! A minimal JSON value and writer: the output needs objects in insertion order,
//! integers up to 64 bits unsigned (and negative constants), strings and arrays.
//! Writing it here keeps serde (and its proc-macro build time) out of the build.

pub enum J {
    Null,
    Bool(bool),
    Int(i128),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn obj() -> J {
        J::Obj(Vec::new())
    }

    /// Adds (or replaces) a key of an object; no-op on other values.
    pub fn set(&mut self, k: &str, v: J) {
        if let J::Obj(kv) = self {
            match kv.iter_mut().find(|(key, _)| key == k) {
                Some(slot) => slot.1 = v,
                None => kv.push((k.to_string(), v)),
            }
        }
    }

    pub fn push(&mut self, v: J) {
        if let J::Arr(a) = self {
            a.push(v);
        }
    }

    pub fn opt_int(v: Option<u64>) -> J {
        v.map_or(J::Null, |n| J::Int(i128::from(n)))
    }

    /// `indent`: Some(n) pretty-prints with n spaces, None writes one line.
    pub fn write(&self, out: &mut String, indent: Option<usize>, level: usize) {
        let nl = |out: &mut String, lvl: usize| {
            if let Some(n) = indent {
                out.push('\n');
                out.extend(std::iter::repeat(' ').take(n * lvl));
            }
        };
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Int(i) => out.push_str(&i.to_string()),
            J::Str(s) => escape(out, s),
            J::Arr(a) if a.is_empty() => out.push_str("[]"),
            J::Obj(o) if o.is_empty() => out.push_str("{}"),
            J::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    nl(out, level + 1);
                    v.write(out, indent, level + 1);
                }
                nl(out, level);
                out.push(']');
            }
            J::Obj(o) => {
                out.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    nl(out, level + 1);
                    escape(out, k);
                    out.push_str(if indent.is_some() { ": " } else { ":" });
                    v.write(out, indent, level + 1);
                }
                nl(out, level);
                out.push('}');
            }
        }
    }
}

fn escape(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
