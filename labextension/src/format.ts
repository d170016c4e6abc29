/**
 * Numbers as people read them: sizes, token counts, time left.
 */

/** `1536` → `1.5 KB`: 1024-based with one decimal, as the kernel's stubs and the explorer write it. */
export function formatBytes(bytes: number): string {
  const units = ['KB', 'MB', 'GB'];
  if (bytes < 1024) {
    return `${formatCount(bytes)} bytes`;
  }
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = value.toLocaleString('en-US', {
    minimumFractionDigits: 1,
    maximumFractionDigits: 1
  });
  return `${text} ${units[unit]}`;
}

/** `1234567` → `1,234,567`; null → `?`. */
export function formatCount(count: number | null | undefined): string {
  if (count === null || count === undefined || !isFinite(count)) {
    return '?';
  }
  return Math.round(count).toLocaleString('en-US');
}

/** Seconds left → `45s`, `12m`, `1h 05m`, `3d 4h`; zero or less → `expired`. */
export function formatTimeLeft(seconds: number): string {
  if (!(seconds > 0)) {
    return 'expired';
  }
  if (seconds < 60) {
    return `${Math.floor(seconds)}s`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return `${minutes}m`;
  }
  const hours = Math.floor(minutes / 60);
  if (hours < 24) {
    return `${hours}h ${String(minutes % 60).padStart(2, '0')}m`;
  }
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** `used / usable tokens`, the status bar's text. */
export function formatBudget(used: number, usable: number): string {
  return `${formatCount(used)} / ${formatCount(usable)} tokens`;
}
