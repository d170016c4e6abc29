/**
 * The sidebar's icon: a stack of pages with a magnifier (stored, one query away).
 */

import { LabIcon } from '@jupyterlab/ui-components';

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M4 3h11l3 3v5.2a6 6 0 0 0-2-.2V7h-3V5H6v14h5.3a6 6 0 0 0 1.2 2H4z"/>
    <path d="M16 12a4 4 0 0 1 3.4 6.1l2.3 2.3-1.4 1.4-2.3-2.3A4 4 0 1 1 16 12zm0 2a2 2 0 1 0 0 4 2 2 0 0 0 0-4z"/>
  </g>
</svg>`;

export const scratchpadIcon = new LabIcon({ name: 'jupyter-scratchpad:icon', svgstr: svg });
