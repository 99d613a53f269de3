//! `check_html5`: the report parsed by html5ever, Servo's implementation of the WHATWG parsing
//! algorithm, with `exact_errors` on so that it reports every parse error the specification
//! defines (a missing doctype, a stray end tag, misnested elements, a bad character
//! reference...), each with its line.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::path::Path;

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tokenizer::TokenizerOpts;
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{parse_document, Attribute, ParseOpts, QualName};
use markup5ever_rcdom::{Handle, RcDom};

/// Panics listing every HTML5 parse error in `html`, by line.
pub fn check_html5(html: &Path) {
    let errors = html5_errors(html);
    if !errors.is_empty() {
        panic!(
            "{} has {} HTML5 parse error(s):\n  - {}",
            html.display(),
            errors.len(),
            errors.join("\n  - ")
        );
    }
}

/// Every parse error, as "line N: message"; empty for a document that parses cleanly.
pub fn html5_errors(html: &Path) -> Vec<String> {
    let bytes =
        std::fs::read(html).unwrap_or_else(|e| panic!("{} cannot be read: {e}", html.display()));
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return vec![format!("the file is not UTF-8: {e}")],
    };
    let opts = ParseOpts {
        tokenizer: TokenizerOpts {
            exact_errors: true,
            ..Default::default()
        },
        tree_builder: TreeBuilderOpts {
            exact_errors: true,
            ..Default::default()
        },
    };
    parse_document(Lines::default(), opts).one(StrTendril::from(text))
}

/// html5ever's reference DOM, with each parse error tagged with the line the parser was on.
#[derive(Default)]
struct Lines {
    dom: RcDom,
    line: Cell<u64>,
    errors: RefCell<Vec<String>>,
}

impl TreeSink for Lines {
    type Handle = Handle;
    type Output = Vec<String>;
    type ElemName<'a> = <RcDom as TreeSink>::ElemName<'a>;

    fn finish(self) -> Vec<String> {
        self.errors.into_inner()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.errors
            .borrow_mut()
            .push(format!("line {}: {msg}", self.line.get().max(1)));
    }

    fn set_current_line(&self, line: u64) {
        self.line.set(line);
    }

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> Self::ElemName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.dom.append(parent, child)
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        self.dom
            .append_based_on_parent_node(element, prev_element, child)
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        self.dom.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs)
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent)
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.dom.maybe_clone_an_option_into_selectedcontent(option)
    }
}
