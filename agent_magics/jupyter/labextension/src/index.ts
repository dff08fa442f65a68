/**
 * The %%agent cell in JupyterLab 4 and Notebook 7.
 *
 * - A cell whose first line is `%%agent` holds a prompt, not Python: its editor is
 *   given Markdown's mode, so words like "is", "in" or "else" are not coloured as
 *   keywords. The notebook sets every code cell's mode from its kernel (on open, on a
 *   kernel change, on a new cell); each time, a prompt cell gets Markdown's back, and a
 *   cell that stops starting with `%%agent` gets the kernel's.
 * - A click on a button of an agent's card (Approve, Deny, Stop, Undo...) takes the
 *   focus out of the notebook, and the card then replaces the button, so the focus falls
 *   to the page and the notebook's shortcuts stop. After such a click the cell that was
 *   selected before it is selected again, in command mode, with the focus in it.
 *
 * The kernel marks its buttons with the class below (agent_magics/jupyter/ui/buttons.py).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICellModel } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookActions } from '@jupyterlab/notebook';

/** The class the kernel gives every button of an agent's card. */
export const BUTTON_CLASS = 'agent-magics-button';

/** The editor mode of a prompt: the one JupyterLab gives Markdown cells. */
export const PROMPT_MIMETYPE = 'text/x-ipythongfm';

/** A cell magic must open the cell; IPython drops blank lines before it. */
const AGENT_CELL = /^\s*%%agent(?:\s|$)/;

/** Whether a cell's source is a prompt to the agent. */
export function isAgentCell(source: string): boolean {
  return AGENT_CELL.test(source);
}

/**
 * Keep each code cell of `notebook` in the mode its source calls for, now and as cells
 * are added, edited, or given the kernel's mode again.
 */
function followCells(notebook: Notebook): void {
  const followed = new WeakSet<ICellModel>();
  const follow = (model: ICellModel): void => {
    if (model.type !== 'code' || followed.has(model)) {
      return;
    }
    followed.add(model);
    const update = (): void => {
      const wanted = isAgentCell(model.sharedModel.getSource())
        ? PROMPT_MIMETYPE
        : notebook.codeMimetype;
      if (model.mimeType !== wanted) {
        model.mimeType = wanted;
      }
    };
    model.contentChanged.connect(update);
    model.mimeTypeChanged.connect(update);
    update();
  };
  const followAll = (): void => {
    const cells = notebook.model?.cells;
    if (!cells) {
      return;
    }
    for (let i = 0; i < cells.length; i++) {
      follow(cells.get(i));
    }
    cells.changed.connect((_, change) => change.newValues.forEach(follow));
  };
  notebook.modelChanged.connect(followAll);
  followAll();
}

/**
 * After a click on a card's button, give the keyboard back to the notebook: the cell
 * selected before the click, in command mode, focused without scrolling.
 */
function keepKeyboard(notebook: Notebook): void {
  let before: number | null = null;
  const onCardButton = (event: Event): boolean =>
    event.target instanceof Element && event.target.closest(`.${BUTTON_CLASS}`) !== null;
  // Capture, on the notebook's node: before the notebook selects the clicked cell.
  notebook.node.addEventListener(
    'pointerdown',
    event => {
      before = onCardButton(event) ? notebook.activeCellIndex : null;
    },
    true
  );
  notebook.node.addEventListener(
    'click',
    event => {
      if (!onCardButton(event)) {
        return;
      }
      // A click from the keyboard (Enter or Space on the button) has no pointerdown.
      const index = before ?? notebook.activeCellIndex;
      before = null;
      // After the widget's own handler has run.
      setTimeout(() => {
        if (notebook.isDisposed || index < 0 || index >= notebook.widgets.length) {
          return;
        }
        notebook.activeCellIndex = index;
        notebook.mode = 'command';
        void NotebookActions.focusActiveCell(notebook, { preventScroll: true });
      }, 0);
    },
    true
  );
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'agent-magics:notebook',
  description: 'A %%agent prompt reads as text; the keyboard stays in the notebook after a click on a card.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker): void => {
    tracker.widgetAdded.connect((_, panel) => {
      followCells(panel.content);
      keepKeyboard(panel.content);
    });
  }
};

export default plugin;
