// jsdom has no DragEvent, which @lumino/dragdrop (through @lumino/widgets) reads at import.
if (typeof globalThis.DragEvent === 'undefined') {
  class DragEvent extends MouseEvent {}
  (globalThis as Record<string, unknown>).DragEvent = DragEvent;
}

// jsdom has no matchMedia, which @jupyter/web-components (through JupyterLab's models) calls at import.
if (typeof window.matchMedia !== 'function') {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => undefined,
      removeListener: () => undefined,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
      dispatchEvent: () => false
    }) as MediaQueryList;
}
