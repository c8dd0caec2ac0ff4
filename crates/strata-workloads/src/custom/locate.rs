//! Where an item of a workload file is: a tree of the file's maps, lists
//! and values with their byte offsets, built only when a check after
//! parsing fails, to turn the check's path (`transaction[1].ops[2].keys`)
//! into a line and column.
//!
//! serde's structs cannot keep positions for both formats (`toml::Spanned`
//! works with toml's deserializer only), so the tree is built again from
//! the text: by toml's own span-keeping parser (`toml::de::DeTable`), and
//! by a small JSON reader here (the text is known to be valid JSON by
//! then: serde_json parsed it first).

use toml::de::{DeTable, DeValue};

/// One step of a path into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Key(&'static str),
    Idx(usize),
}

/// An item of the file: where it starts and ends (byte offsets, the end
/// exclusive) and what it holds.
#[derive(Debug)]
pub(super) struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Map(Vec<(String, Node)>),
    List(Vec<Node>),
    Leaf,
}

impl Node {
    /// The start of the item at `path`, or of the deepest item on the way
    /// there that exists (a missing field: the table or object that lacks
    /// it).
    pub(super) fn locate(&self, path: &[Step]) -> usize {
        let mut node = self;
        for step in path {
            let next = match (step, &node.kind) {
                (Step::Key(k), Kind::Map(m)) => m.iter().find(|(n, _)| n == k).map(|(_, v)| v),
                (Step::Idx(i), Kind::List(l)) => l.get(*i),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node.start
    }

    /// The start of the map (JSON object) that ends at byte `end`.
    fn map_ending_at(&self, end: usize) -> Option<usize> {
        if end < self.start || end > self.end {
            return None;
        }
        match &self.kind {
            Kind::Map(_) if self.end == end => Some(self.start),
            Kind::Map(m) => m.iter().find_map(|(_, n)| n.map_ending_at(end)),
            Kind::List(l) => l.iter().find_map(|n| n.map_ending_at(end)),
            Kind::Leaf => None,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// Line and column of a serde_json error. serde_json reports where it
/// stopped reading: for a missing field that is the object's closing
/// brace, so the object's opening line is reported instead.
pub(super) fn json_error_at(text: &str, e: &serde_json::Error) -> (usize, usize) {
    if e.line() == 0 {
        return (1, 1);
    }
    // serde_json's column counts the bytes read on the line, the one it
    // stopped at included.
    let line_start = text
        .split_inclusive('\n')
        .take(e.line() - 1)
        .map(str::len)
        .sum::<usize>();
    let offset = line_start + e.column().saturating_sub(1);
    if e.to_string().starts_with("missing field") {
        if let Some(start) = json_tree(text).and_then(|t| t.map_ending_at(offset + 1)) {
            return line_col(text, start);
        }
    }
    line_col(text, offset)
}

// ------------------------------------------------------------------ TOML

pub(super) fn toml_tree(text: &str) -> Option<Node> {
    let root = DeTable::parse(text).ok()?;
    let span = root.span();
    Some(Node {
        start: span.start,
        end: span.end.max(text.len()),
        kind: toml_map(root.get_ref()),
    })
}

fn toml_map(t: &DeTable<'_>) -> Kind {
    Kind::Map(
        t.iter()
            .map(|(k, v)| (k.get_ref().to_string(), toml_node(v)))
            .collect(),
    )
}

fn toml_node(v: &toml::Spanned<DeValue<'_>>) -> Node {
    let span = v.span();
    let kind = match v.get_ref() {
        DeValue::Table(t) => toml_map(t),
        DeValue::Array(a) => Kind::List(a.iter().map(toml_node).collect()),
        _ => Kind::Leaf,
    };
    Node {
        start: span.start,
        end: span.end,
        kind,
    }
}

// ------------------------------------------------------------------ JSON

pub(super) fn json_tree(text: &str) -> Option<Node> {
    let mut r = JsonReader {
        text,
        s: text.as_bytes(),
        i: 0,
    };
    r.value()
}

struct JsonReader<'a> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
}

impl JsonReader<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        let hit = self.s.get(self.i) == Some(&b);
        self.i += usize::from(hit);
        hit
    }

    fn value(&mut self) -> Option<Node> {
        self.skip_ws();
        let start = self.i;
        let kind = match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.skip_ws();
                        let key = self.string()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        fields.push((key, self.value()?));
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Kind::Map(fields)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Kind::List(items)
            }
            b'"' => {
                self.string()?;
                Kind::Leaf
            }
            _ => {
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| !b",]} \t\r\n".contains(b))
                {
                    self.i += 1;
                }
                Kind::Leaf
            }
        };
        Some(Node {
            start,
            end: self.i,
            kind,
        })
    }

    /// A string at the current byte, decoded (by serde_json: escapes).
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        loop {
            match *self.s.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => break,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        serde_json::from_str(self.text.get(start..self.i)?).ok()
    }
}
