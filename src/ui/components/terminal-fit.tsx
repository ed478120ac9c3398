import { Box, type DOMElement } from 'ink';
import { type ReactNode, useLayoutEffect, useReducer, useRef } from 'react';

export interface TerminalFitProps {
  columns: number;
  rows: number;
  children: ReactNode;
}

/**
 * Keeps a frame inside the terminal: at most `columns` wide and `rows - 1` tall, cut at the
 * right and at the bottom. A frame as tall as the terminal makes Ink clear the screen and the
 * scrollback (ESC[2J ESC[3J) on every redraw; a wider one wraps, and each redraw leaves the
 * wrapped parts behind.
 */
export function TerminalFit({ columns, rows, children }: TerminalFitProps) {
  const frame = useRef<DOMElement>(null);
  const limit = Math.max(1, rows - 1);
  // Yoga's maxHeight, which Ink's Box does not take as a prop, set before this frame's layout on
  // the node the last frame made; the first frame has no node yet and is cut to a fixed height.
  frame.current?.yogaNode?.setMaxHeight(limit);
  const first = frame.current === null;
  // The first frame is drawn again at once with the node in hand, at its own height: a dashboard
  // stopped before its next frame (a short bench) left the padding of the fixed one on screen.
  const [, drawAgain] = useReducer((count: number) => count + 1, 0);
  useLayoutEffect(drawAgain, []);
  return (
    <Box
      ref={frame}
      flexDirection="column"
      width={Math.max(1, columns)}
      overflow="hidden"
      height={first ? limit : undefined}
    >
      <Box flexDirection="column" flexShrink={0}>
        {children}
      </Box>
    </Box>
  );
}
