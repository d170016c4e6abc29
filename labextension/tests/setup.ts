// jsdom has no DragEvent, which @lumino/dragdrop (through @lumino/widgets) reads at import.
if (typeof globalThis.DragEvent === 'undefined') {
  class DragEvent extends MouseEvent {}
  (globalThis as Record<string, unknown>).DragEvent = DragEvent;
}
