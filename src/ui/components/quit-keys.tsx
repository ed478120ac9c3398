import { useInput, useStdin } from 'ink';

export interface QuitKeysProps {
  onQuit: () => void;
  /** Keys that quit besides Ctrl-C; default `q`. */
  keys?: readonly string[];
}

/** Calls onQuit on `q` or Ctrl-C when the input is a terminal; draws nothing. */
export function QuitKeys({ onQuit, keys = ['q'] }: QuitKeysProps) {
  const { isRawModeSupported } = useStdin();
  useInput(
    (input, key) => {
      if (keys.includes(input) || (key.ctrl && input === 'c')) onQuit();
    },
    { isActive: isRawModeSupported === true },
  );
  return null;
}
