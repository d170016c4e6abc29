// Unit tests of the renderer, the sidebar view and the protocol, in jsdom.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'jsdom',
    include: ['tests/**/*.test.ts'],
    setupFiles: ['tests/setup.ts'],
    // JupyterLab's own models (OutputAreaModel) load @jupyter/web-components, whose ESM build
    // imports files without extensions: Vite resolves those, Node does not.
    server: { deps: { inline: [/@jupyter\/web-components/] } }
  }
});
