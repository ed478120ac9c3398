import { useInput, useStdin } from 'ink';

export interface SelectionKeysProps {
  /** Called with +1 on Tab and →, -1 on Shift-Tab and ←. */
  onStep: (step: number) => void;
}

/** Moves a selection with Tab / ← / → when the input is a terminal; draws nothing. */
export function SelectionKeys({ onStep }: SelectionKeysProps) {
  const { isRawModeSupported } = useStdin();
  useInput(
    (_input, key) => {
      if (key.tab) onStep(key.shift ? -1 : 1);
      else if (key.rightArrow) onStep(1);
      else if (key.leftArrow) onStep(-1);
    },
    { isActive: isRawModeSupported === true },
  );
  return null;
}
