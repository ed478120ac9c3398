import { Text } from 'ink';
import { Component, type ReactNode } from 'react';

export interface RenderGuardProps {
  children: ReactNode;
  /** A value that changes every frame: the guard tries to draw again when it does. */
  frame: number;
}

interface RenderGuardState {
  error: Error | undefined;
  erroredAtFrame: number;
}

/**
 * Keeps a drawing bug (or a stats document the view did not expect) from taking the process down
 * with it: the frame shows the error instead, and the next frame tries again.
 */
export class RenderGuard extends Component<RenderGuardProps, RenderGuardState> {
  override state: RenderGuardState = { error: undefined, erroredAtFrame: -1 };

  static getDerivedStateFromError(error: unknown): Partial<RenderGuardState> {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  override componentDidCatch(): void {
    this.setState({ erroredAtFrame: this.props.frame });
  }

  override componentDidUpdate(): void {
    if (
      this.state.error !== undefined &&
      this.state.erroredAtFrame !== -1 &&
      this.props.frame !== this.state.erroredAtFrame
    ) {
      this.setState({ error: undefined, erroredAtFrame: -1 });
    }
  }

  override render(): ReactNode {
    if (this.state.error !== undefined) {
      return (
        <Text color="red" wrap="truncate">
          cannot draw this frame: {this.state.error.message}
        </Text>
      );
    }
    return this.props.children;
  }
}
