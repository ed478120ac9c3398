import { useInput, useStdin } from 'ink';

export interface QuitKeysProps {
  /** Told the key pressed: `q` (or another of `keys`), or `Ctrl-C`. */
  onQuit: (key: string) => void;
  /** Keys that quit besides Ctrl-C; default `q`. */
  keys?: readonly string[];
}

/** Calls onQuit on `q` or Ctrl-C when the input is a terminal, naming the key; draws nothing. */
export function QuitKeys({ onQuit, keys = ['q'] }: QuitKeysProps) {
  const { isRawModeSupported } = useStdin();
  useInput(
    (input, key) => {
      if (key.ctrl && input === 'c') onQuit('Ctrl-C');
      else if (keys.includes(input)) onQuit(input);
    },
    { isActive: isRawModeSupported === true },
  );
  return null;
}
