// Markdown for the answers: CommonMark (plus tables and strikethrough) by markdown-it, its
// HTML then sanitized by DOMPurify. HTML written in the text stays text, links go to
// http(s) URLs only and open in a new tab, images are not fetched (their markup stays text).
// Both libraries are vendored files (vendor/README.md).
import MarkdownIt from "./vendor/markdown-it.min.js";
import DOMPurify from "./vendor/purify.es.js";

const HTTP = /^https?:\/\//i;

const md = new MarkdownIt("default", { html: false, linkify: true, breaks: true });
md.validateLink = (url) => HTTP.test(url.trim());
md.disable("image");

const SANITIZE = {
  ALLOWED_URI_REGEXP: /^https?:\/\//i,
  ADD_ATTR: ["target"],
  FORBID_TAGS: ["style", "img", "form", "input", "button", "textarea", "select"],
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Markdown text -> sanitized HTML, ready for innerHTML. */
export function renderMarkdown(source) {
  return DOMPurify.sanitize(md.render(String(source ?? "")), SANITIZE);
}
