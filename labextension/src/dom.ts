/**
 * DOM helpers shared by the card and the sidebar: elements built from text nodes only, so that
 * nothing from a notebook output is ever parsed as HTML.
 */

/** An element with a class and, optionally, its text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
